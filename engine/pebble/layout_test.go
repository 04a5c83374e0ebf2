package pebble

import (
	"bytes"
	"errors"
	"testing"

	"github.com/utxostore/utxostore/engine"
)

func TestRecordRoundTrip(t *testing.T) {
	k := engine.Key{1, 2, 3}
	cases := []struct {
		terms   engine.Terms
		expires int64
		value   []byte
	}{
		{engine.Terms{}, 0, []byte("v")},
		{engine.Terms{UnminedSince: 1, DeleteAtHeight: 1 << 31, PreserveUntil: ^uint32(0), ProducedAt: 800_000, Consumed: true}, 0, nil},
		{engine.Terms{}, 1_700_000_000_000_000_000, bytes.Repeat([]byte{0xAB}, 300)},
	}
	for _, c := range cases {
		enc := encodeRecord(c.terms, c.expires, c.value)
		r, err := decodeRecord(k, enc)
		if err != nil {
			t.Fatal(err)
		}
		if r.terms != c.terms || r.expires != c.expires || !bytes.Equal(r.value, c.value) {
			t.Fatalf("round trip of %+v/%d/%x gave %+v", c.terms, c.expires, c.value, r)
		}
	}
	if n := len(encodeRecord(engine.Terms{}, 0, nil)); n != 5 {
		t.Errorf("header of a record with no terms is %d bytes, want 5", n)
	}
}

func TestDecodeRejectsCorruptHeaders(t *testing.T) {
	for _, b := range [][]byte{
		nil,
		{0x80},    // unknown flag
		{0, 0x80}, // truncated varint
		{0, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0}, // term beyond 32 bits
		{flagExpires, 0, 0, 0, 0, 1, 2},            // truncated expiry
	} {
		_, err := decodeRecord(engine.Key{}, b)
		var ce *engine.CorruptionError
		if !errors.As(err, &ce) {
			t.Errorf("decode %x: got %v, want a CorruptionError", b, err)
		}
	}
}

func TestIndexBoundsCoverTheTermRange(t *testing.T) {
	k := engine.Key{9}
	lower, upper := indexBounds(engine.ByDeleteAtHeight, 10, 20)
	in := func(term uint32) bool {
		key := indexKey(engine.ByDeleteAtHeight, term, k)
		return bytes.Compare(key, lower) >= 0 && bytes.Compare(key, upper) < 0
	}
	if in(9) || !in(10) || !in(20) || in(21) {
		t.Fatal("bounds of [10,20] are wrong")
	}
	lower, upper = indexBounds(engine.ByDeleteAtHeight, 5, ^uint32(0))
	key := indexKey(engine.ByDeleteAtHeight, ^uint32(0), engine.Key{0xff, 0xff})
	if bytes.Compare(key, lower) < 0 || bytes.Compare(key, upper) >= 0 {
		t.Fatal("the maximum term is outside the open-ended bounds")
	}
	if other := indexKey(engine.ByPreserveUntil, 0, k); bytes.Compare(other, upper) < 0 {
		t.Fatal("open-ended bounds reach into the next index")
	}
}
