package blockstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/internal/testdata"
)

var mainnetMagic = [4]byte{0xf9, 0xbe, 0xb4, 0xd9}

// mainnetBlocks reads the raw blocks of the shared mainnet file.
func mainnetBlocks(t *testing.T) [][]byte {
	t.Helper()
	data, err := os.ReadFile(testdata.Path(t, "btc-mainnet-0-14131.blk"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks [][]byte
	for len(data) >= 8 && binary.LittleEndian.Uint32(data) != 0 {
		n := binary.LittleEndian.Uint32(data[4:])
		blocks = append(blocks, data[8:8+n])
		data = data[8+n:]
	}
	return blocks
}

func hashOf(raw []byte) chainhash.Hash { return chainhash.DoubleHashH(raw[:80]) }

func open(t *testing.T, dir string, opts Options) *Store {
	t.Helper()
	opts.Magic = mainnetMagic
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func putAll(t *testing.T, s *Store, blocks [][]byte, from int) {
	t.Helper()
	for h := from; h < len(blocks); h++ {
		if err := s.Put(uint32(h), hashOf(blocks[h]), blocks[h]); err != nil {
			t.Fatal(err)
		}
	}
}

// Every mainnet block comes back byte for byte, by height and by hash,
// after a reopen; the segments are blk*.dat files equal to the source.
func TestMainnetBlocksRoundTrip(t *testing.T) {
	blocks := mainnetBlocks(t)
	dir := t.TempDir()
	s := open(t, dir, Options{NoSync: true})
	putAll(t, s, blocks, 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, Options{})
	defer s.Close()
	if tip, ok := s.Tip(); !ok || tip != uint32(len(blocks)-1) || s.Low() != 0 {
		t.Fatalf("tip %d (%v), low %d", tip, ok, s.Low())
	}
	for h, want := range blocks {
		got, hash, ok, err := s.Block(uint32(h))
		if err != nil || !ok || !bytes.Equal(got, want) || hash != hashOf(want) {
			t.Fatalf("block %d: ok %v err %v, equal %v", h, ok, err, bytes.Equal(got, want))
		}
		if hh, ok, err := s.HeightOf(hash); err != nil || !ok || hh != uint32(h) {
			t.Fatalf("height of %s: %d %v %v", hash, hh, ok, err)
		}
	}
	seg, err := os.ReadFile(filepath.Join(dir, "blk00000.dat"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(testdata.Path(t, "btc-mainnet-0-14131.blk"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(seg, src[:len(seg)]) {
		t.Fatal("the segment is not the blk*.dat framing of the blocks")
	}
	disk, err := s.DiskBytes()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d blocks, %d bytes of segments, %d bytes on disk in all", len(blocks), len(seg), disk)
}

// With a retention of n, the newest n blocks are held, older ones are
// gone, and segments holding only older blocks are deleted.
func TestRetentionPrunes(t *testing.T) {
	blocks := mainnetBlocks(t)[:3000]
	dir := t.TempDir()
	s := open(t, dir, Options{Retention: 500, SegmentBytes: 64 << 10, NoSync: true})
	defer s.Close()
	putAll(t, s, blocks, 0)
	if s.Low() != 2500 {
		t.Fatalf("low %d, want 2500", s.Low())
	}
	if _, _, ok, err := s.Block(2499); ok || err != nil {
		t.Fatalf("block 2499 is still held (%v)", err)
	}
	if _, ok, err := s.HeightOf(hashOf(blocks[2499])); ok || err != nil {
		t.Fatalf("hash of block 2499 is still held (%v)", err)
	}
	for h := 2500; h < 3000; h++ {
		if got, _, ok, err := s.Block(uint32(h)); !ok || err != nil || !bytes.Equal(got, blocks[h]) {
			t.Fatalf("block %d: %v %v", h, ok, err)
		}
	}
	l, _, _ := s.Location(2500)
	if _, err := os.Stat(filepath.Join(dir, "blk00000.dat")); !os.IsNotExist(err) || l.Segment == 0 {
		t.Fatalf("segment 0 should be deleted (the window starts in segment %d): %v", l.Segment, err)
	}
	if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("blk%05d.dat", l.Segment))); err != nil {
		t.Fatalf("the window's first segment is gone: %v", err)
	}
}

// Bytes written after the last committed location, as a crash between
// the two writes leaves them, are cut off on open; the next block follows
// the last whole one.
func TestTornTailCutOnOpen(t *testing.T) {
	blocks := mainnetBlocks(t)[:20]
	dir := t.TempDir()
	s := open(t, dir, Options{})
	putAll(t, s, blocks[:10], 0)
	s.Close()
	seg := filepath.Join(dir, "blk00000.dat")
	before, _ := os.ReadFile(seg)
	f, err := os.OpenFile(seg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(append(mainnetMagic[:], 0xff, 0xff, 0, 0, 1, 2, 3))
	f.Close()

	s = open(t, dir, Options{})
	defer s.Close()
	if after, _ := os.ReadFile(seg); !bytes.Equal(after, before) {
		t.Fatalf("the torn tail was not cut: %d bytes, want %d", len(after), len(before))
	}
	putAll(t, s, blocks, 10)
	for h := range blocks {
		if got, _, ok, err := s.Block(uint32(h)); !ok || err != nil || !bytes.Equal(got, blocks[h]) {
			t.Fatalf("block %d: %v %v", h, ok, err)
		}
	}
}

// A gap or a height below the window is refused and changes nothing; a
// height the store holds is replaced and the ones above it dropped, unless
// the block put is the one held there.
func TestPutOrderAndReorg(t *testing.T) {
	blocks := mainnetBlocks(t)[:10]
	s := open(t, t.TempDir(), Options{Retention: 8})
	defer s.Close()
	putAll(t, s, blocks, 0)
	if err := s.Put(12, hashOf(blocks[0]), blocks[0]); !errors.Is(err, ErrNotNext) {
		t.Fatalf("a gap: %v", err)
	}
	if err := s.Put(1, hashOf(blocks[1]), blocks[1]); !errors.Is(err, ErrNotNext) {
		t.Fatalf("below the window: %v", err)
	}
	// The block held at height 7, put again: nothing changes.
	if err := s.Put(7, hashOf(blocks[7]), blocks[7]); err != nil {
		t.Fatal(err)
	}
	if tip, _ := s.Tip(); tip != 9 {
		t.Fatalf("tip %d after the held block 7 was put again, want 9", tip)
	}
	// Another block at height 7: 7 is replaced, 8 and 9 are gone.
	if err := s.Put(7, hashOf(blocks[3]), blocks[3]); err != nil {
		t.Fatal(err)
	}
	if tip, _ := s.Tip(); tip != 7 {
		t.Fatalf("tip %d after the reorg, want 7", tip)
	}
	if got, _, ok, _ := s.Block(7); !ok || !bytes.Equal(got, blocks[3]) {
		t.Fatal("height 7 is not the new block")
	}
	for _, h := range []int{7, 8, 9} {
		if _, ok, _ := s.HeightOf(hashOf(blocks[h])); ok {
			t.Fatalf("the replaced block %d is still found by hash", h)
		}
	}
	if _, _, ok, _ := s.Block(8); ok {
		t.Fatal("height 8 survived the reorg")
	}
}

// TestDropFrom forgets the blocks from a height up, as a disconnection
// does, durably: after a reopen the tip is below them, the next block
// goes on top, and dropping everything empties the store, which then
// takes a block at any height.
// TestBlocksPutAgainAfterADropFollowTheirParent: blocks dropped from the
// tip (a rollback after a crash between keeping a block and storing it)
// and put again leave the segment the blk*.dat framing of the chain, as
// if never dropped, with no stale copy a block-file reader would take as
// the next block; and so after a reopen.
func TestBlocksPutAgainAfterADropFollowTheirParent(t *testing.T) {
	blocks := mainnetBlocks(t)[:10]
	src, err := os.ReadFile(testdata.Path(t, "btc-mainnet-0-14131.blk"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := open(t, dir, Options{})
	putAll(t, s, blocks, 0)
	want, err := os.ReadFile(filepath.Join(dir, "blk00000.dat"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, src[:len(want)]) {
		t.Fatal("the segment is not the blk*.dat framing of the blocks")
	}
	for _, from := range []uint32{9, 7} {
		if err := s.DropFrom(from); err != nil {
			t.Fatal(err)
		}
		putAll(t, s, blocks, int(from))
		got, err := os.ReadFile(filepath.Join(dir, "blk00000.dat"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("after dropping from %d and putting the blocks again the segment holds %d bytes, want the %d of the chain's framing", from, len(got), len(want))
		}
	}
	if err := s.DropFrom(5); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, dir, Options{})
	defer s.Close()
	putAll(t, s, blocks, 5)
	if got, err := os.ReadFile(filepath.Join(dir, "blk00000.dat")); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("after a drop, a reopen and the blocks again: %d bytes (%v), want the %d of the chain's framing", len(got), err, len(want))
	}
}

func TestDropFrom(t *testing.T) {
	blocks := mainnetBlocks(t)[:10]
	dir := t.TempDir()
	s := open(t, dir, Options{})
	putAll(t, s, blocks, 0)
	if err := s.DropFrom(7); err != nil {
		t.Fatal(err)
	}
	if tip, ok := s.Tip(); !ok || tip != 6 {
		t.Fatalf("tip %d (held: %v) after dropping from 7, want 6", tip, ok)
	}
	if _, ok, _ := s.HeightOf(hashOf(blocks[8])); ok {
		t.Fatal("a dropped block is still found by hash")
	}
	if err := s.DropFrom(20); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = open(t, dir, Options{})
	if tip, ok := s.Tip(); !ok || tip != 6 {
		t.Fatalf("tip %d (held: %v) after a reopen, want 6", tip, ok)
	}
	if err := s.Put(7, hashOf(blocks[7]), blocks[7]); err != nil {
		t.Fatalf("the block after the new tip: %v", err)
	}
	if got, _, ok, _ := s.Block(7); !ok || !bytes.Equal(got, blocks[7]) {
		t.Fatal("height 7 is not the block put again")
	}
	if err := s.DropFrom(0); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = open(t, dir, Options{})
	defer s.Close()
	if _, ok := s.Tip(); ok {
		t.Fatal("the store holds blocks after dropping them all")
	}
	if err := s.Put(5, hashOf(blocks[5]), blocks[5]); err != nil {
		t.Fatalf("an emptied store refuses a block: %v", err)
	}
	if got, _, ok, _ := s.Block(5); !ok || !bytes.Equal(got, blocks[5]) {
		t.Fatal("the emptied store does not hold the block put into it")
	}
}
