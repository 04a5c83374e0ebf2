package index

import (
	"fmt"
	"math/bits"

	vlq "github.com/bsm/go-vlq"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// The append helpers write Blockbook's primitive types.

func appendUvarint(b []byte, v uint64) []byte {
	var tmp [vlq.MaxLen64]byte
	return append(b, tmp[:vlq.PutUint(tmp[:], v)]...)
}

func appendVarint(b []byte, v int64) []byte {
	var tmp [vlq.MaxLen64]byte
	return append(b, tmp[:vlq.PutInt(tmp[:], v)]...)
}

// appendAmount writes a bigInt: a length byte, then the minimal big-endian
// magnitude, the same bytes Blockbook's packBigint produces.
func appendAmount(b []byte, v uint64) []byte {
	n := (bits.Len64(v) + 7) / 8
	b = append(b, byte(n))
	for i := n - 1; i >= 0; i-- {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

// appendHash writes a hash in Blockbook's (display) byte order.
func appendHash(b []byte, h *chainhash.Hash) []byte {
	for i := chainhash.HashSize - 1; i >= 0; i-- {
		b = append(b, h[i])
	}
	return b
}

// packedHash returns a hash in Blockbook's byte order, for use as a key.
func packedHash(h *chainhash.Hash) []byte {
	return appendHash(make([]byte, 0, chainhash.HashSize), h)
}

// decoder reads Blockbook's primitive types and remembers the first error,
// so that codecs read straight through and check once at the end.
type decoder struct {
	buf []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
	d.buf = nil
}

func (d *decoder) empty() bool { return len(d.buf) == 0 }

func (d *decoder) uvarint() uint64 { return decodeVLQ(d, vlq.Uint) }

func (d *decoder) varint() int64 { return decodeVLQ(d, vlq.Int) }

// decodeVLQ reads one varint with read (vlq.Uint or vlq.Int).
func decodeVLQ[T uint64 | int64](d *decoder, read func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	v, n := read(d.buf)
	if n <= 0 {
		d.fail("truncated or overflowing varint")
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

// uint32v reads a vuint that must fit in 32 bits.
func (d *decoder) uint32v(what string) uint32 {
	v := d.uvarint()
	if v > 1<<32-1 {
		d.fail("%s %d exceeds 32 bits", what, v)
		return 0
	}
	return uint32(v)
}

// int32v reads a vint that must fit in 32 bits.
func (d *decoder) int32v(what string) int32 {
	v := d.varint()
	if v != int64(int32(v)) {
		d.fail("%s %d exceeds 32 bits", what, v)
		return 0
	}
	return int32(v)
}

// count reads an element count and rejects one that cannot fit in the
// remaining bytes, so a corrupt count never triggers a huge allocation.
func (d *decoder) count(what string, minSize int) int {
	v := d.uvarint()
	if d.err == nil && v > uint64(len(d.buf)/minSize) {
		d.fail("%s %d does not fit in %d remaining bytes", what, v, len(d.buf))
		return 0
	}
	return int(v)
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.buf) {
		d.fail("need %d bytes, have %d", n, len(d.buf))
		return nil
	}
	b := d.buf[:n:n]
	d.buf = d.buf[n:]
	return b
}

func (d *decoder) uint32be() uint32 {
	b := d.bytes(4)
	if b == nil {
		return 0
	}
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func (d *decoder) hash() chainhash.Hash {
	var h chainhash.Hash
	b := d.bytes(chainhash.HashSize)
	for i := range b {
		h[chainhash.HashSize-1-i] = b[i]
	}
	return h
}

// amount reads a bigInt that must fit in a uint64.
func (d *decoder) amount() uint64 {
	b := d.bytes(1)
	if b == nil {
		return 0
	}
	if b[0] > 8 {
		d.fail("amount of %d bytes exceeds 64 bits", b[0])
		return 0
	}
	var v uint64
	for _, x := range d.bytes(int(b[0])) {
		v = v<<8 | uint64(x)
	}
	return v
}

// done reports the first error, or trailing bytes, as a CorruptError.
func (d *decoder) done(c column, key []byte) error {
	if d.err == nil && len(d.buf) != 0 {
		d.err = fmt.Errorf("%d trailing bytes", len(d.buf))
	}
	if d.err != nil {
		return corrupt(c, key, "%v", d.err)
	}
	return nil
}
