package record

import (
	"encoding/binary"
	"math"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/utxo/model"
)

// reader is a bounds-checked cursor over an encoded value. The first error
// sticks and every later read returns zero values, so decoders read a whole
// structure and check r.err once. Counts are checked against the bytes left
// before anything is allocated, so a hostile length cannot make a decoder
// allocate more than a small multiple of its input.
type reader struct {
	b   []byte
	off int
	err *model.Error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = malformed(format, args...)
	}
}

func (r *reader) remaining() int { return len(r.b) - r.off }

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > r.remaining() {
		r.fail("need %d bytes at offset %d, have %d", n, r.off, r.remaining())
		return nil
	}
	s := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return s
}

func (r *reader) byte() byte {
	s := r.take(1)
	if s == nil {
		return 0
	}
	return s[0]
}

func (r *reader) uvarint() uint64 {
	// One byte is the common case (a flag word, a small count or height).
	if r.err == nil && r.off < len(r.b) && r.b[r.off] < 0x80 {
		r.off++
		return uint64(r.b[r.off-1])
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if !r.skipVarint(n, "uvarint") {
		return 0
	}
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b[r.off:])
	if !r.skipVarint(n, "varint") {
		return 0
	}
	return v
}

// skipVarint moves past a varint of n bytes, as encoding/binary gives its
// length. It is false when r has failed already, or fails now because n
// says no varint could be read.
func (r *reader) skipVarint(n int, what string) bool {
	if r.err != nil {
		return false
	}
	if n <= 0 {
		r.fail("bad %s at offset %d", what, r.off)
		return false
	}
	r.off += n
	return true
}

// u32 reads a uvarint that must fit in 32 bits.
func (r *reader) u32() uint32 {
	v := r.uvarint()
	if v > math.MaxUint32 {
		r.fail("value %d overflows uint32", v)
		return 0
	}
	return uint32(v)
}

func (r *reader) u32le() uint32 {
	s := r.take(4)
	if s == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(s)
}

func (r *reader) u64le() uint64 {
	s := r.take(8)
	if s == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(s)
}

func (r *reader) hash() chainhash.Hash {
	var h chainhash.Hash
	copy(h[:], r.take(chainhash.HashSize))
	return h
}

// count reads a uvarint element count and checks that count elements of at
// least minSize bytes each can fit in what is left.
func (r *reader) count(minSize int) int {
	n := r.uvarint()
	return r.checkCount(n, minSize)
}

// fixedCount is count for a little-endian uint32 count.
func (r *reader) fixedCount(minSize int) int {
	return r.checkCount(uint64(r.u32le()), minSize)
}

func (r *reader) checkCount(n uint64, minSize int) int {
	if r.err != nil {
		return 0
	}
	if minSize < 1 {
		minSize = 1
	}
	if n > uint64(r.remaining()/minSize) {
		r.fail("count %d cannot fit in the %d bytes left", n, r.remaining())
		return 0
	}
	return int(n)
}

// bytesField reads a uvarint length and that many bytes (aliasing r.b).
func (r *reader) bytesField() []byte {
	n := r.count(1)
	return r.take(n)
}

// Bitcoin CompactSize, the "varint" of Bitcoin's transaction encoding.

func appendCompactSize(dst []byte, v uint64) []byte {
	switch {
	case v < 0xfd:
		return append(dst, byte(v))
	case v <= math.MaxUint16:
		return binary.LittleEndian.AppendUint16(append(dst, 0xfd), uint16(v))
	case v <= math.MaxUint32:
		return binary.LittleEndian.AppendUint32(append(dst, 0xfe), uint32(v))
	default:
		return binary.LittleEndian.AppendUint64(append(dst, 0xff), v)
	}
}

// compactSize reads a canonical CompactSize; a value written in more bytes
// than needed is MALFORMED, so every value has exactly one encoding.
func (r *reader) compactSize() uint64 {
	p := r.byte()
	var v, min uint64
	switch p {
	case 0xfd:
		s := r.take(2)
		if s == nil {
			return 0
		}
		v, min = uint64(binary.LittleEndian.Uint16(s)), 0xfd
	case 0xfe:
		s := r.take(4)
		if s == nil {
			return 0
		}
		v, min = uint64(binary.LittleEndian.Uint32(s)), 0x10000
	case 0xff:
		s := r.take(8)
		if s == nil {
			return 0
		}
		v, min = binary.LittleEndian.Uint64(s), 0x100000000
	default:
		return uint64(p)
	}
	if v < min {
		r.fail("non-canonical compact size %d", v)
		return 0
	}
	return v
}

// compactBytes reads a CompactSize length and that many bytes.
func (r *reader) compactBytes() []byte {
	n := r.compactSize()
	if r.err != nil {
		return nil
	}
	if n > uint64(r.remaining()) {
		r.fail("script length %d exceeds the %d bytes left", n, r.remaining())
		return nil
	}
	return r.take(int(n))
}
