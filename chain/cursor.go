package chain

import (
	"encoding/binary"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// cursor walks a byte slice. Every read checks the remaining length first,
// so malformed input turns into ErrTruncated instead of a panic, and slices
// it returns alias the input (no copies).
type cursor struct {
	buf []byte
	off int
}

func (c *cursor) remaining() int { return len(c.buf) - c.off }

func (c *cursor) take(n uint64) ([]byte, error) {
	if n > uint64(c.remaining()) {
		return nil, ErrTruncated
	}
	start := c.off
	c.off += int(n)
	return c.buf[start:c.off:c.off], nil
}

func (c *cursor) uint32() (uint32, error) {
	b, err := c.take(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (c *cursor) uint64() (uint64, error) {
	b, err := c.take(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (c *cursor) hash() (chainhash.Hash, error) {
	b, err := c.take(chainhash.HashSize)
	if err != nil {
		return chainhash.Hash{}, err
	}
	return chainhash.Hash(b), nil
}

func (c *cursor) compactSize() (uint64, error) {
	v, n, err := DecodeCompactSize(c.buf[c.off:])
	if err != nil {
		return 0, err
	}
	c.off += n
	return v, nil
}

// count reads a CompactSize that counts items of at least minItemSize bytes
// each. A count that cannot fit in the remaining bytes is rejected before
// anyone allocates for it, which is what makes a hostile prefix such as
// 2^60 inputs harmless.
func (c *cursor) count(minItemSize int) (int, error) {
	v, err := c.compactSize()
	if err != nil {
		return 0, err
	}
	if v > uint64(c.remaining()/minItemSize) {
		return 0, ErrTruncated
	}
	return int(v), nil
}

// varBytes reads a CompactSize length and that many bytes.
func (c *cursor) varBytes() ([]byte, error) {
	n, err := c.compactSize()
	if err != nil {
		return nil, err
	}
	return c.take(n)
}
