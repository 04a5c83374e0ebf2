package sozu

import (
	"encoding/binary"
	"errors"

	"github.com/utxostore/utxostore/engine"
)

// entry is one record inside a bucket: the key, its index terms, an
// optional expiry (lock records created with a time to live) and either the
// value itself or a pointer into the shard's value log.
type entry struct {
	key       engine.Key
	terms     engine.Terms
	expiresAt int64 // unix nanoseconds; 0: never
	value     []byte
	outOfLine bool
	ptr       valuePointer
}

// valuePointer locates an out-of-line value in the shard's value log.
type valuePointer struct {
	offset uint64
	length uint32
}

const (
	flagConsumed  = 1 << 0
	flagOutOfLine = 1 << 1
	flagExpires   = 1 << 2
)

var errShortEntry = errors.New("entry runs past its bucket")

// live reports whether the record exists at time now (its time to live, if
// any, has not passed).
func (e *entry) live(now int64) bool { return e.expiresAt == 0 || now < e.expiresAt }

// encodedSize is the number of bytes appendEntry writes; bucket capacities
// are measured in it.
func (e *entry) encodedSize() int {
	n := engine.KeySize + 1 + uvarintLen(uint64(e.terms.ProducedAt)) + uvarintLen(uint64(e.terms.UnminedSince)) +
		uvarintLen(uint64(e.terms.DeleteAtHeight)) + uvarintLen(uint64(e.terms.PreserveUntil))
	if e.expiresAt != 0 {
		n += uvarintLen(uint64(e.expiresAt))
	}
	if e.outOfLine {
		return n + uvarintLen(e.ptr.offset) + uvarintLen(uint64(e.ptr.length))
	}
	return n + uvarintLen(uint64(len(e.value))) + len(e.value)
}

func appendEntry(dst []byte, e *entry) []byte {
	dst = append(dst, e.key[:]...)
	var flags byte
	if e.terms.Consumed {
		flags |= flagConsumed
	}
	if e.outOfLine {
		flags |= flagOutOfLine
	}
	if e.expiresAt != 0 {
		flags |= flagExpires
	}
	dst = append(dst, flags)
	dst = binary.AppendUvarint(dst, uint64(e.terms.ProducedAt))
	dst = binary.AppendUvarint(dst, uint64(e.terms.UnminedSince))
	dst = binary.AppendUvarint(dst, uint64(e.terms.DeleteAtHeight))
	dst = binary.AppendUvarint(dst, uint64(e.terms.PreserveUntil))
	if e.expiresAt != 0 {
		dst = binary.AppendUvarint(dst, uint64(e.expiresAt))
	}
	if e.outOfLine {
		dst = binary.AppendUvarint(dst, e.ptr.offset)
		return binary.AppendUvarint(dst, uint64(e.ptr.length))
	}
	dst = binary.AppendUvarint(dst, uint64(len(e.value)))
	return append(dst, e.value...)
}

// decodeEntry reads one entry from src and returns the rest. The value
// aliases src (one allocation per bucket instead of one per entry, the top
// allocation cost of deep reads): src must be a buffer the bucket owns and
// nothing writes to afterwards.
func decodeEntry(src []byte) (entry, []byte, error) {
	var e entry
	if len(src) < engine.KeySize+1 {
		return e, nil, errShortEntry
	}
	copy(e.key[:], src)
	flags := src[engine.KeySize]
	src = src[engine.KeySize+1:]
	e.terms.Consumed = flags&flagConsumed != 0
	var err error
	var terms [4]uint64
	for i := range terms {
		if terms[i], src, err = readUvarint(src); err != nil {
			return e, nil, err
		}
		if terms[i] > 0xFFFFFFFF {
			return e, nil, errors.New("height beyond 32 bits")
		}
	}
	e.terms.ProducedAt, e.terms.UnminedSince = uint32(terms[0]), uint32(terms[1])
	e.terms.DeleteAtHeight, e.terms.PreserveUntil = uint32(terms[2]), uint32(terms[3])
	if flags&flagExpires != 0 {
		var exp uint64
		if exp, src, err = readUvarint(src); err != nil {
			return e, nil, err
		}
		e.expiresAt = int64(exp)
	}
	if flags&flagOutOfLine != 0 {
		e.outOfLine = true
		var length uint64
		if e.ptr.offset, src, err = readUvarint(src); err != nil {
			return e, nil, err
		}
		if length, src, err = readUvarint(src); err != nil {
			return e, nil, err
		}
		e.ptr.length = uint32(length)
		return e, src, nil
	}
	n, src, err := readUvarint(src)
	if err != nil {
		return e, nil, err
	}
	if n > uint64(len(src)) {
		return e, nil, errShortEntry
	}
	e.value = src[:n:n]
	return e, src[n:], nil
}

func readUvarint(src []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(src)
	if n <= 0 {
		return 0, nil, errors.New("bad varint")
	}
	return v, src[n:], nil
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
