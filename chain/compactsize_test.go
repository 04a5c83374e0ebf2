package chain

import (
	"bytes"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/wire"
)

var compactSizeEdges = []uint64{0, 1, 0xfc, 0xfd, 0xfe, 0xff, 0x100, 0xffff, 0x10000, 0xffffffff, 0x100000000, 1<<64 - 1}

// The hand-written slice codec must agree with wire's reader and writer.
func TestCompactSizeMatchesWire(t *testing.T) {
	for _, v := range compactSizeEdges {
		var want bytes.Buffer
		if err := wire.WriteVarInt(&want, 0, v); err != nil {
			t.Fatal(err)
		}
		got := AppendCompactSize(nil, v)
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%#x: encoded %x, wire %x", v, got, want.Bytes())
		}
		back, width, err := DecodeCompactSize(got)
		if err != nil || back != v || width != len(got) || compactSizeWidth(got[0]) != width {
			t.Errorf("%#x: decoded %#x width %d err %v", v, back, width, err)
		}
	}
}

func TestCompactSizeRejects(t *testing.T) {
	for _, b := range [][]byte{{0xfd, 0xfc, 0x00}, {0xfe, 0xff, 0xff, 0, 0}, {0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}} {
		if _, _, err := DecodeCompactSize(b); !errors.Is(err, ErrNonCanonicalVarInt) {
			t.Errorf("%x: %v, want ErrNonCanonicalVarInt", b, err)
		}
		if _, err := wire.ReadVarInt(bytes.NewReader(b), 0); err == nil {
			t.Errorf("%x: wire accepts it", b)
		}
	}
	for _, b := range [][]byte{{}, {0xfd, 0x00}, {0xfe, 0, 0, 0}, {0xff, 0, 0, 0, 0, 0, 0, 0}} {
		if _, _, err := DecodeCompactSize(b); !errors.Is(err, ErrTruncated) {
			t.Errorf("%x: %v, want ErrTruncated", b, err)
		}
	}
}

func FuzzCompactSize(f *testing.F) {
	for _, v := range compactSizeEdges {
		f.Add(AppendCompactSize(nil, v))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, width, err := DecodeCompactSize(b)
		want, wireErr := wire.ReadVarInt(bytes.NewReader(b), 0)
		if (err == nil) != (wireErr == nil) || (err == nil && got != want) {
			t.Fatalf("%x: ours %d %v, wire %d %v", b, got, err, want, wireErr)
		}
		if err == nil && !bytes.Equal(AppendCompactSize(nil, got), b[:width]) {
			t.Fatalf("%x: does not re-encode", b)
		}
	})
}
