package server

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/internal/testdata"
	"github.com/utxostore/utxostore/utxo"
)

// mainnetBlocks reads the first n blocks of the real chain.
func mainnetBlocks(t *testing.T, n int) []utxo.Block {
	t.Helper()
	data, err := os.ReadFile(testdata.Path(t, "btc-mainnet-0-14131.blk"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []utxo.Block
	for height := range n {
		size := binary.LittleEndian.Uint32(data[4:])
		b, err := chain.ParseBlock(data[8 : 8+size])
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, utxo.BlockFromChain(b, uint32(height)))
		data = data[8+size:]
	}
	return blocks
}

// storeAheadOfIndex connects blocks to a store and the first indexed of
// them to an address index, as a crash between the two writes leaves them.
func storeAheadOfIndex(t *testing.T, blocks []utxo.Block, indexed int) (*utxo.DB, *index.Index) {
	t.Helper()
	ctx := context.Background()
	db, err := utxo.Open(ctx, memory.New(), utxo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	idx, err := index.Open(filepath.Join(t.TempDir(), "index"), index.Options{Coin: "Bitcoin"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	for i, b := range blocks {
		if err := db.ConnectBlock(ctx, b); err != nil {
			t.Fatal(err)
		}
		if i < indexed {
			if err := idx.ConnectBlock(IndexedForm(b)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return db, idx
}

// TestIndexBehindTheStoreCatchesUp: with the index three blocks behind the
// store, the daemon refuses a new block (the gap would grow), takes the
// store's blocks from the index's tip on and only indexes them, and then
// connects new blocks to both.
func TestIndexBehindTheStoreCatchesUp(t *testing.T) {
	ctx := context.Background()
	blocks := mainnetBlocks(t, 12)
	db, idx := storeAheadOfIndex(t, blocks[:10], 7)
	b := NewBackend(db, idx, nil)
	if next, behind, err := IndexLag(ctx, db, idx); err != nil || !behind || next != 7 {
		t.Fatalf("IndexLag: next %d behind %v err %v; want 7 true nil", next, behind, err)
	}
	if err := b.ConnectBlock(ctx, blocks[10]); !errors.Is(err, ErrIndexBehind) {
		t.Fatalf("a new block while the index is behind: %v, want ErrIndexBehind", err)
	}
	if err := b.ConnectBlock(ctx, blocks[8]); !errors.Is(err, ErrIndexBehind) {
		t.Fatalf("a block past the index's next one: %v, want ErrIndexBehind", err)
	}
	for _, blk := range blocks[7:12] {
		if err := b.ConnectBlock(ctx, blk); err != nil {
			t.Fatalf("block %d: %v", blk.Height, err)
		}
	}
	tip, _, err := db.Tip(ctx)
	if err != nil {
		t.Fatal(err)
	}
	best, _, err := idx.BestBlock()
	if err != nil {
		t.Fatal(err)
	}
	if tip.Height != 11 || tip.Hash != blocks[11].Hash || best.Height != 11 || best.Hash != blocks[11].Hash {
		t.Fatalf("the store's tip is %d %s, the index's %d %s; want both at block 11", tip.Height, tip.Hash, best.Height, best.Hash)
	}
}

// TestIndexOfAnotherChainIsRefused: an index whose tip is not the store's
// block at that height belongs to another chain.
func TestIndexOfAnotherChainIsRefused(t *testing.T) {
	ctx := context.Background()
	blocks := mainnetBlocks(t, 5)
	db, idx := storeAheadOfIndex(t, blocks[:3], 0)
	other := blocks[0]
	other.Hash[0] ^= 1
	if err := idx.ConnectBlock(IndexedForm(other)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := IndexLag(ctx, db, idx); err == nil {
		t.Fatal("an index of another chain was taken")
	}
	if err := NewBackend(db, idx, nil).ConnectBlock(ctx, blocks[3]); err == nil {
		t.Fatal("a block was connected over an index of another chain")
	}
}
