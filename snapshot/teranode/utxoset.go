package teranode

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/snapshot"
)

const setFormat = "Teranode UTXO set (utxo-set)"

// footerSize is the UTXO set file's footer: two u64 counts.
const footerSize = 16

// SetHeader is what a UTXO set file says of its block.
type SetHeader struct {
	BlockHash chainhash.Hash
	Height    uint32
	PrevHash  chainhash.Hash
}

// SetWriter writes a UTXO set file, a transaction at a time; Close writes
// the footer.
type SetWriter struct {
	w          io.Writer
	txs, utxos uint64
	buf        []byte
}

// NewSetWriter writes the header to w.
func NewSetWriter(w io.Writer, h SetHeader) (*SetWriter, error) {
	b := append([]byte(nil), magicSet...)
	b = append(b, h.BlockHash[:]...)
	b = binary.LittleEndian.AppendUint32(b, h.Height)
	b = append(b, h.PrevHash[:]...)
	_, err := w.Write(b)
	return &SetWriter{w: w}, err
}

// WriteTx writes the coins of one transaction (at least one) as its
// UTXOWrapper, in the order given.
func (w *SetWriter) WriteTx(coins []coinstats.Coin) error {
	if len(coins) == 0 {
		return fmt.Errorf("teranode utxo-set: a transaction with no coins")
	}
	var err error
	if w.buf, err = appendWrapper(w.buf[:0], coins); err != nil {
		return fmt.Errorf("teranode utxo-set: %w", err)
	}
	w.txs++
	w.utxos += uint64(len(coins))
	_, err = w.w.Write(w.buf)
	return err
}

// Close writes the footer: the counts of transactions and outputs.
func (w *SetWriter) Close() error {
	b := binary.LittleEndian.AppendUint64(nil, w.txs)
	b = binary.LittleEndian.AppendUint64(b, w.utxos)
	_, err := w.w.Write(b)
	return err
}

// SetReader reads a UTXO set file a transaction at a time.
type SetReader struct {
	r          hashingReader
	header     SetHeader
	txs, utxos uint64
	done       bool
}

// NewSetReader reads the header from r. A file of another type or version
// is refused with a *snapshot.FileError wrapping what was found.
func NewSetReader(r io.Reader) (*SetReader, error) {
	sr := &SetReader{r: newHashingReader(r)}
	if err := readMagic(sr.r.Reader, magicSet, setFormat); err != nil {
		return nil, err
	}
	var err error
	h := &sr.header
	if h.BlockHash, err = sr.r.Hash("block hash"); err != nil {
		return nil, err
	}
	if h.Height, err = sr.r.Uint32("block height"); err != nil {
		return nil, err
	}
	if h.PrevHash, err = sr.r.Hash("previous block hash"); err != nil {
		return nil, err
	}
	return sr, nil
}

// Header is what the file says of its block.
func (r *SetReader) Header() SetHeader { return r.header }

// Next returns the coins of the next transaction, in ascending vout
// order, and io.EOF after the last, once the footer has been read and
// agrees with what came before it.
func (r *SetReader) Next() ([]coinstats.Coin, error) {
	if r.done {
		return nil, io.EOF
	}
	// The footer is the last 16 bytes: a wrapper is longer, so 16 bytes
	// and the end of the file are the footer.
	at := r.r.Offset()
	next, err := r.r.Peek(footerSize + 1)
	if err != nil {
		return nil, err
	}
	if len(next) == footerSize {
		return nil, r.readFooter(at)
	}
	if len(next) < footerSize {
		return nil, r.r.Fail(at, "footer", snapshot.ErrTruncated)
	}
	coins, err := readWrapper(r.r.Reader, r.txs)
	if err != nil {
		return nil, err
	}
	if len(coins) == 0 {
		return nil, r.r.Failf(at, fmt.Sprintf("transaction %d", r.txs), "a transaction with no unspent output")
	}
	slices.SortFunc(coins, func(a, b coinstats.Coin) int { return a.Compare(b.Outpoint) })
	for i := 1; i < len(coins); i++ {
		if coins[i].Vout == coins[i-1].Vout {
			return nil, r.r.Failf(at, fmt.Sprintf("transaction %d", r.txs), "output %d appears twice", coins[i].Vout)
		}
	}
	r.txs++
	r.utxos += uint64(len(coins))
	return coins, nil
}

func (r *SetReader) readFooter(at int64) error {
	txs, err := r.r.Uint64("footer transaction count")
	if err != nil {
		return err
	}
	utxos, err := r.r.Uint64("footer output count")
	if err != nil {
		return err
	}
	if txs != r.txs || utxos != r.utxos {
		return r.r.Failf(at, "footer", "it counts %d transactions and %d outputs, the file holds %d and %d: truncated or damaged", txs, utxos, r.txs, r.utxos)
	}
	r.done = true
	return io.EOF
}

// Counts are the footer's counts of transactions and outputs, once Next
// has returned io.EOF.
func (r *SetReader) Counts() (txs, utxos uint64) { return r.txs, r.utxos }

// Sum is the SHA-256 of the file, once Next has returned io.EOF.
func (r *SetReader) Sum() []byte { return r.r.sum.Sum(nil) }
