package redis

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"github.com/utxostore/utxostore/engine"
)

// stampSize is the length of the random stamp that prefixes every stored
// value. A write sets a fresh stamp; the CAS script compares it. A random
// stamp (not a counter) cannot repeat when a record is deleted and made
// again, so an old read never matches a newer record (no ABA), and a write
// whose reply was lost can be recognised by its stamp on the next read.
const stampSize = 8

func newStamp() string {
	return string(binary.LittleEndian.AppendUint64(nil, rand.Uint64()))
}

// encode makes the stored string: stamp ‖ value.
func encode(stamp string, value []byte) []byte {
	b := make([]byte, stampSize+len(value))
	copy(b, stamp)
	copy(b[stampSize:], value)
	return b
}

// stored is one stored string as read: absent, or a stamp and a value.
type stored struct {
	present bool
	stamp   string
	value   []byte
}

// decode splits a stored string; one shorter than a stamp was not written
// by this engine.
func decode(redisKey, raw string) (stored, error) {
	if len(raw) < stampSize {
		return stored{}, &engine.CorruptionError{Engine: Name, Where: fmt.Sprintf("key %q", redisKey),
			Detail: fmt.Sprintf("stored string of %d bytes is shorter than its %d-byte stamp", len(raw), stampSize)}
	}
	return stored{present: true, stamp: raw[:stampSize], value: []byte(raw[stampSize:])}, nil
}

// expect is the stamp a CAS against s compares with.
func (s stored) expect() string {
	if !s.present {
		return ""
	}
	return s.stamp
}
