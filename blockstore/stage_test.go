package blockstore

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/utxostore/utxostore/chain"
)

// stage stages raw as the block of its hash.
func stage(t *testing.T, s *Store, raw []byte) *Staged {
	t.Helper()
	st, err := s.Stage(bytes.NewReader(raw), int64(len(raw)), hashOf(raw))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// readAll reads a block reader to its end and closes it.
func readAll(t *testing.T, r *BlockReader) []byte {
	t.Helper()
	defer r.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A staged block is read back as staged, and once adopted it is the
// store's block at its height like a put one: by Block and OpenBlock,
// after a reopen, starting a segment, a blk*.dat file, that the blocks
// put after it continue. The staging file is gone.
func TestStageAndAdopt(t *testing.T) {
	blocks := mainnetBlocks(t)[:6]
	dir := t.TempDir()
	s := open(t, dir, Options{})
	putAll(t, s, blocks[:2], 0)
	st := stage(t, s, blocks[2])
	if got := readAll(t, must(st.Open())); !bytes.Equal(got, blocks[2]) || st.Size() != int64(len(blocks[2])) || st.Hash() != hashOf(blocks[2]) {
		t.Fatal("the staged block reads back otherwise")
	}
	if err := s.Adopt(2, st); err != nil {
		t.Fatal(err)
	}
	for h := 3; h < len(blocks); h++ {
		if err := s.Put(uint32(h), hashOf(blocks[h]), blocks[h]); err != nil {
			t.Fatal(err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "incoming", "*")); len(left) != 0 {
		t.Errorf("staging files left: %v", left)
	}
	check := func(s *Store) {
		t.Helper()
		for h, want := range blocks {
			raw, hash, ok, err := s.Block(uint32(h))
			if err != nil || !ok || !bytes.Equal(raw, want) || hash != hashOf(want) {
				t.Fatalf("block %d: %v %v", h, ok, err)
			}
			r, hash, ok, err := s.OpenBlock(uint32(h))
			if err != nil || !ok || hash != hashOf(want) || !bytes.Equal(readAll(t, r), want) {
				t.Fatalf("block %d by reader: %v %v", h, ok, err)
			}
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, Options{})
	defer s.Close()
	check(s)
	for seg, want := range [][][]byte{blocks[:2], blocks[2:]} {
		f, err := os.Open(s.segmentPath(uint32(seg)))
		if err != nil {
			t.Fatal(err)
		}
		frames := chain.NewFrameReader(f, mainnetMagic)
		for _, w := range want {
			if b, err := frames.NextBlock(); err != nil || !bytes.Equal(b.Raw, w) {
				t.Fatalf("segment %d: %v", seg, err)
			}
		}
		if _, err := frames.NextBlock(); err != io.EOF {
			t.Fatalf("segment %d holds more: %v", seg, err)
		}
		f.Close()
	}
}

// A staged block that is not the next is refused and its file removed; a
// discarded one leaves nothing; a reader that fails part way leaves
// nothing; staging files left by a crash, and a segment adopted by a
// crash before its location was committed, are removed on Open.
func TestStageRefusedDiscardedAndCrashed(t *testing.T) {
	blocks := mainnetBlocks(t)[:4]
	dir := t.TempDir()
	s := open(t, dir, Options{})
	putAll(t, s, blocks[:2], 0)
	if err := s.Adopt(3, stage(t, s, blocks[3])); !errors.Is(err, ErrNotNext) {
		t.Errorf("a staged block two past the tip: %v", err)
	}
	if err := stage(t, s, blocks[2]).Discard(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stage(bytes.NewReader(blocks[2][:100]), int64(len(blocks[2])), hashOf(blocks[2])); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a reader that ends early: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "incoming", "*")); len(left) != 0 {
		t.Errorf("staging files left: %v", left)
	}
	// A crash: one block staged, another moved in as segment 1 with no
	// location.
	stage(t, s, blocks[3])
	moved := stage(t, s, blocks[2])
	if err := os.Rename(moved.path, s.segmentPath(1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, Options{})
	defer s.Close()
	if left, _ := filepath.Glob(filepath.Join(dir, "incoming", "*")); len(left) != 0 {
		t.Errorf("staging files left after a reopen: %v", left)
	}
	if _, err := os.Stat(s.segmentPath(1)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the segment adopted without a location is still there: %v", err)
	}
	if tip, ok := s.Tip(); !ok || tip != 1 {
		t.Fatalf("tip %d %v", tip, ok)
	}
	if err := s.Adopt(2, stage(t, s, blocks[2])); err != nil {
		t.Fatal(err)
	}
}

// A location of a block of 4 GiB or more keeps its length in 8 bytes; one
// below keeps the 4-byte form every existing location has.
func TestLocationOfAHugeBlock(t *testing.T) {
	for _, l := range []Location{{Hash: hashOf(make([]byte, 80)), Segment: 7, Offset: 16, Length: 5 << 30}, {Segment: 1, Offset: 8, Length: 1000}} {
		enc := encodeLocation(&l)
		if want := map[bool]int{true: 52, false: 48}[l.Length >= 1<<32]; len(enc) != want {
			t.Errorf("length %d: %d bytes, want %d", l.Length, len(enc), want)
		}
		if got, err := decodeLocation(enc); err != nil || got != l {
			t.Errorf("round trip of %+v: %+v %v", l, got, err)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
