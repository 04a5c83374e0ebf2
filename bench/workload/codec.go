package workload

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo"
)

// The stream format is private to one bench run (the parent writes it, the
// per-engine children read it) and to the determinism test, so it is kept
// minimal: a kind byte, then the kind's fields as uvarints, 32-byte hashes,
// 80-byte block headers (a block's hash is its header's) and
// length-prefixed raw transactions. It starts with a magic and version so
// that a stale file is refused rather than misread.
var streamMagic = [8]byte{'u', 't', 'x', 'o', 'b', 'n', 'c', 3}

// Writer serialises operations.
type Writer struct {
	w       *bufio.Writer
	started bool
	scratch []byte
	n       int
}

// NewWriter writes a stream to w; call Flush at the end.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriterSize(w, 1<<16)} }

// Count is the number of operations written.
func (w *Writer) Count() int { return w.n }

// Write appends one operation.
func (w *Writer) Write(op *Op) error {
	b := w.scratch[:0]
	if !w.started {
		b = append(b, streamMagic[:]...)
		w.started = true
	}
	b = append(b, byte(op.Kind))
	switch op.Kind {
	case Submit:
		b = appendTx(b, op.Tx)
	case DoubleSpend:
		b = appendTx(b, op.Tx)
		b = binary.AppendUvarint(b, uint64(op.Input))
	case Apply:
		b = appendTx(b, op.Tx)
		b = binary.AppendUvarint(b, uint64(op.Height))
		b = binary.AppendUvarint(b, op.Live)
		b = binary.AppendUvarint(b, uint64(len(op.Inputs)))
		for _, in := range op.Inputs {
			b = binary.AppendUvarint(b, uint64(in))
		}
	case Connect, Disconnect:
		blk := op.Block
		if blk.Header == nil || blk.Header.BlockHash() != blk.Hash {
			return fmt.Errorf("workload: block %s at height %d needs the header it is the hash of", blk.Hash, blk.Height)
		}
		var header bytes.Buffer
		_ = blk.Header.Serialize(&header) // bytes.Buffer writes cannot fail
		b = append(b, header.Bytes()...)
		b = binary.AppendUvarint(b, uint64(blk.Height))
		b = binary.AppendUvarint(b, op.Live)
		if op.Kind == Connect {
			b = append(b, boolByte(op.Fresh))
		}
		b = binary.AppendUvarint(b, uint64(len(blk.Txs)))
		for _, tx := range blk.Txs {
			b = appendTx(b, tx)
		}
	case Read:
		b = binary.AppendUvarint(b, uint64(len(op.Outpoints)))
		for _, o := range op.Outpoints {
			b = append(b, o.Hash[:]...)
			b = binary.AppendUvarint(b, uint64(o.Index))
		}
	case Measure:
	default:
		return fmt.Errorf("workload: cannot write operation of kind %d", op.Kind)
	}
	w.scratch = b
	w.n++
	_, err := w.w.Write(b)
	return err
}

// Flush writes what is buffered.
func (w *Writer) Flush() error { return w.w.Flush() }

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

func appendTx(b []byte, tx *chain.Tx) []byte {
	b = binary.AppendUvarint(b, uint64(len(tx.Raw)))
	return append(b, tx.Raw...)
}

// Reader reads a stream written by Writer.
type Reader struct {
	r       *bufio.Reader
	started bool
}

// NewReader reads a stream from r.
func NewReader(r io.Reader) *Reader { return &Reader{r: bufio.NewReaderSize(r, 1<<16)} }

// Next returns the next operation, or io.EOF after the last.
func (r *Reader) Next() (*Op, error) {
	if !r.started {
		var magic [8]byte
		if _, err := io.ReadFull(r.r, magic[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("workload: reading the stream header: %w", err)
		}
		if magic != streamMagic {
			return nil, errors.New("workload: not an operation stream of this version")
		}
		r.started = true
	}
	k, err := r.r.ReadByte()
	if err != nil {
		return nil, err // io.EOF between operations is the end
	}
	op := &Op{Kind: Kind(k)}
	if err := r.fields(op); err != nil {
		return nil, fmt.Errorf("workload: reading a %s operation: %w", op.Kind, noEOF(err))
	}
	return op, nil
}

func (r *Reader) fields(op *Op) (err error) {
	switch op.Kind {
	case Submit:
		op.Tx, err = r.tx()
	case DoubleSpend:
		if op.Tx, err = r.tx(); err != nil {
			return err
		}
		op.Input, err = r.u32()
	case Apply:
		if op.Tx, err = r.tx(); err != nil {
			return err
		}
		if op.Height, err = r.u32(); err != nil {
			return err
		}
		if op.Live, err = binary.ReadUvarint(r.r); err != nil {
			return err
		}
		n, err := r.count()
		if err != nil {
			return err
		}
		op.Inputs = make([]uint32, n)
		for i := range op.Inputs {
			if op.Inputs[i], err = r.u32(); err != nil {
				return err
			}
		}
	case Connect, Disconnect:
		var header wire.BlockHeader
		if err := header.Deserialize(r.r); err != nil {
			return err
		}
		blk := &utxo.Block{Header: &header, Hash: header.BlockHash(), PrevHash: header.PrevBlock}
		op.Block = blk
		if blk.Height, err = r.u32(); err != nil {
			return err
		}
		if op.Live, err = binary.ReadUvarint(r.r); err != nil {
			return err
		}
		if op.Kind == Connect {
			if op.Fresh, err = r.flag(); err != nil {
				return err
			}
		}
		n, err := r.count()
		if err != nil {
			return err
		}
		blk.Txs = make([]*chain.Tx, n)
		for i := range blk.Txs {
			if blk.Txs[i], err = r.tx(); err != nil {
				return err
			}
		}
	case Read:
		n, err := r.count()
		if err != nil {
			return err
		}
		op.Outpoints = make([]wire.OutPoint, n)
		for i := range op.Outpoints {
			if op.Outpoints[i].Hash, err = r.hash(); err != nil {
				return err
			}
			if op.Outpoints[i].Index, err = r.u32(); err != nil {
				return err
			}
		}
	case Measure:
	default:
		return fmt.Errorf("unknown operation kind %d", op.Kind)
	}
	return err
}

func (r *Reader) flag() (bool, error) {
	b, err := r.r.ReadByte()
	if err == nil && b > 1 {
		err = fmt.Errorf("flag byte %d", b)
	}
	return b == 1, err
}

func (r *Reader) u32() (uint32, error) {
	v, err := binary.ReadUvarint(r.r)
	if err == nil && v > 1<<32-1 {
		err = fmt.Errorf("value %d out of range", v)
	}
	return uint32(v), err
}

// count reads a length, refusing absurd ones so that a corrupt stream
// fails instead of allocating without bound.
func (r *Reader) count() (int, error) {
	v, err := binary.ReadUvarint(r.r)
	if err == nil && v > 1<<26 {
		err = fmt.Errorf("count %d out of range", v)
	}
	return int(v), err
}

func (r *Reader) hash() (chainhash.Hash, error) {
	var h chainhash.Hash
	_, err := io.ReadFull(r.r, h[:])
	return h, err
}

func (r *Reader) tx() (*chain.Tx, error) {
	n, err := binary.ReadUvarint(r.r)
	if err != nil {
		return nil, err
	}
	if n > 1<<30 {
		return nil, fmt.Errorf("transaction of %d bytes", n)
	}
	raw := make([]byte, n)
	if _, err := io.ReadFull(r.r, raw); err != nil {
		return nil, err
	}
	return chain.ParseTx(raw)
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
