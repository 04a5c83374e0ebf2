package chain

import (
	"bufio"
	"bytes"
	"fmt"
	"io"

	"github.com/btcsuite/btcd/wire"
)

// BlockReader streams one block: the header and count first, then one
// transaction per Next call. Memory use is bounded by the largest single
// transaction, not the block, and nothing caps the block size or the
// transaction count (wire.MsgBlock refuses blocks over 4 MB; BSV blocks
// reach gigabytes).
type BlockReader struct {
	src  *stream
	info BlockInfo
	next uint64 // index of the next transaction
	// scratch collects each transaction's bytes before they are copied to
	// an exactly sized Raw: growing a fresh slice per transaction cost
	// several reallocations per small transaction.
	scratch []byte
	err     error // sticky: once failed or finished, Next keeps returning it
	// wrap decorates errors with the caller's context (the frame reader
	// adds the frame number and file offset).
	wrap func(error) error
}

// maxScratch is the largest scratch buffer a BlockReader keeps between
// transactions; bigger transactions keep their buffer as Raw.
const maxScratch = 1 << 20

// readerBufferSize suits both small test files and multi-GB blocks.
const readerBufferSize = 1 << 16

// NewBlockReader reads the block header and transaction count from r and
// returns a reader positioned at the first transaction. r is buffered
// internally unless it already is a *bufio.Reader.
func NewBlockReader(r io.Reader) (*BlockReader, error) {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, readerBufferSize)
	}
	return newBlockReader(&stream{r: br, limit: -1}, nil)
}

func newBlockReader(src *stream, wrap func(error) error) (*BlockReader, error) {
	if wrap == nil {
		wrap = func(err error) error { return err }
	}
	var header [HeaderSize]byte
	if _, err := src.appendN(header[:0], HeaderSize); err != nil {
		return nil, wrap(fieldErr(err, 0, "block header"))
	}
	h, hash, err := decodeHeader(header[:])
	if err != nil {
		return nil, wrap(err)
	}
	var countBytes [9]byte
	_, count, err := src.appendCompactSize(countBytes[:0])
	if err != nil {
		return nil, wrap(fieldErr(err, HeaderSize, "transaction count"))
	}
	return &BlockReader{
		src:  src,
		info: BlockInfo{Header: h, Hash: hash, TxCount: count},
		wrap: wrap,
	}, nil
}

// Info describes the block. Info().Size is the number of bytes read so
// far; it is the block's size once Next has returned io.EOF.
func (b *BlockReader) Info() BlockInfo {
	info := b.info
	info.Size = b.src.n
	return info
}

// Header is the block header.
func (b *BlockReader) Header() *wire.BlockHeader { return &b.info.Header }

// Remaining is the number of transactions not yet returned by Next.
func (b *BlockReader) Remaining() uint64 { return b.info.TxCount - b.next }

// Next returns the next transaction, or io.EOF after the last one. Each Tx
// owns its bytes, so it may be kept after further calls. After an error,
// Next keeps returning that error.
func (b *BlockReader) Next() (*Tx, error) {
	if b.err != nil {
		return nil, b.err
	}
	if b.next == b.info.TxCount {
		b.err = io.EOF
		if left, limited := b.src.remaining(); limited && left != 0 {
			b.err = b.wrap(fieldErr(ErrTrailingBytes, int(b.src.n), "end of block"))
		}
		return nil, b.err
	}
	index, start := b.next, b.src.n
	scratch, err := b.src.readTxBytes(b.scratch[:0])
	if err == nil {
		raw := scratch
		if cap(scratch) <= maxScratch {
			raw = bytes.Clone(scratch)
			b.scratch = scratch
		} else {
			b.scratch = nil // hand a huge buffer over instead of copying it
		}
		var tx *Tx
		if tx, err = ParseTx(raw); err == nil {
			b.next++
			return tx, nil
		}
	}
	b.err = b.wrap(inTx(err, index, start))
	return nil, b.err
}

// Locate wraps err with where the block lies, as the reader's own errors
// are: for a block of a blk*.dat file, a [*FrameError] with the frame
// number and file offset. Callers use it for what they find wrong with the
// block after reading it (a failed [BlockRules.Check]).
func (b *BlockReader) Locate(err error) error { return b.wrap(err) }

// skipRest reads and discards the remaining transactions, so that the
// underlying reader is positioned after the block.
func (b *BlockReader) skipRest() error {
	for {
		if _, err := b.Next(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// ReadBlock reads the remaining transactions and returns the whole block,
// its Raw being the header, the transaction count and each transaction's
// bytes as read. Call it before any Next, to hold the block in memory as
// [ParseBlock] would have parsed it.
func (b *BlockReader) ReadBlock() (*Block, error) {
	if b.next != 0 {
		return nil, fmt.Errorf("chain: ReadBlock after %d transactions were read one by one", b.next)
	}
	txs := make([]*Tx, 0, min(b.info.TxCount, 1<<16))
	size := HeaderSize + wire.VarIntSerializeSize(b.info.TxCount)
	for b.Remaining() > 0 {
		tx, err := b.Next()
		if err != nil {
			return nil, err
		}
		txs = append(txs, tx)
		size += len(tx.Raw)
	}
	raw := bytes.NewBuffer(make([]byte, 0, size))
	_ = b.info.Header.Serialize(raw) // a bytes.Buffer does not fail
	_ = wire.WriteVarInt(raw, 0, b.info.TxCount)
	for _, tx := range txs {
		raw.Write(tx.Raw)
	}
	info := b.Info()
	info.Size = int64(raw.Len())
	return &Block{BlockInfo: info, Raw: raw.Bytes(), Txs: txs}, nil
}
