package enginetest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/utxostore/utxostore/engine"
)

// A crash value describes itself, so that after a crash the verifier can
// tell from the bytes alone which operation wrote it, for which key, with
// which index terms, and whether it arrived whole:
//
//	magic[4] op[8] slot[2] key[32] terms[4×4] consumed[1] prev[8] pad[n] crc32c[4]
//
// prev is the op of the value the update function saw (noPrev for none),
// which ties each value to the read-modify-write that produced it.
const (
	crashMagic      = "UXCR"
	crashHeaderSize = 4 + 8 + 2 + engine.KeySize + 16 + 1 + 8
	crashMinSize    = crashHeaderSize + 4
	noPrev          = ^uint64(0)
	// metaSlot marks the value of the metadata entry.
	metaSlot = 0xFFFF
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type crashValue struct {
	op    uint64
	slot  uint16
	key   engine.Key
	terms engine.Terms
	prev  uint64
}

func (v crashValue) encode(pad int) []byte {
	b := make([]byte, 0, crashMinSize+pad)
	b = append(b, crashMagic...)
	b = binary.BigEndian.AppendUint64(b, v.op)
	b = binary.BigEndian.AppendUint16(b, v.slot)
	b = append(b, v.key[:]...)
	for _, t := range []uint32{v.terms.UnminedSince, v.terms.DeleteAtHeight, v.terms.PreserveUntil, v.terms.ProducedAt} {
		b = binary.BigEndian.AppendUint32(b, t)
	}
	if v.terms.Consumed {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.BigEndian.AppendUint64(b, v.prev)
	// Padding that differs per op and slot, so a value copied from another
	// place or a stale block cannot pass for this one.
	x := v.op*0x9E3779B97F4A7C15 ^ uint64(v.slot)<<48 | 1
	for i := 0; i < pad; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b = append(b, byte(x))
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

var errNotCrashValue = errors.New("not a crash-test value")

func decodeCrashValue(b []byte) (crashValue, error) {
	var v crashValue
	if len(b) < crashMinSize || string(b[:4]) != crashMagic {
		return v, fmt.Errorf("%w (%d bytes)", errNotCrashValue, len(b))
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return v, fmt.Errorf("checksum mismatch in a %d-byte value", len(b))
	}
	p := b[4:]
	v.op = binary.BigEndian.Uint64(p)
	v.slot = binary.BigEndian.Uint16(p[8:])
	copy(v.key[:], p[10:])
	p = p[10+engine.KeySize:]
	v.terms = engine.Terms{
		UnminedSince:   binary.BigEndian.Uint32(p),
		DeleteAtHeight: binary.BigEndian.Uint32(p[4:]),
		PreserveUntil:  binary.BigEndian.Uint32(p[8:]),
		ProducedAt:     binary.BigEndian.Uint32(p[12:]),
		Consumed:       p[16] == 1,
	}
	v.prev = binary.BigEndian.Uint64(p[17:])
	return v, nil
}
