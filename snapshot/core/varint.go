package core

import (
	"errors"
	"math"

	"github.com/utxostore/utxostore/snapshot/internal/binread"
)

// Core's VARINT (src/serialize.h, WriteVarInt/ReadVarInt): base-128 digits,
// most significant first, the high bit marking all but the last, and each
// digit but the last one less than its value, so that every number has one
// encoding. Neither LEB128 nor github.com/bsm/go-vlq (which skips that
// subtraction) reads it.

// appendVarInt appends n in Core's VARINT encoding.
func appendVarInt(dst []byte, n uint64) []byte {
	var tmp [10]byte
	i := len(tmp) - 1
	tmp[i] = byte(n & 0x7f)
	for n > 0x7f {
		n = n>>7 - 1
		i--
		tmp[i] = byte(n&0x7f) | 0x80
	}
	return append(dst, tmp[i:]...)
}

// errVarIntTooLarge is Core's "ReadVarInt(): size too large".
var errVarIntTooLarge = errors.New("VARINT above 2^64-1")

// readVarInt reads a Core VARINT.
func readVarInt(r *binread.Reader, field string) (uint64, error) {
	at := r.Offset()
	var n uint64
	for {
		b, err := r.Byte(field)
		if err != nil {
			return 0, err
		}
		if n > math.MaxUint64>>7 {
			return 0, r.Failf(at, field, "%v", errVarIntTooLarge)
		}
		n = n<<7 | uint64(b&0x7f)
		if b&0x80 == 0 {
			return n, nil
		}
		if n == math.MaxUint64 {
			return 0, r.Failf(at, field, "%v", errVarIntTooLarge)
		}
		n++
	}
}
