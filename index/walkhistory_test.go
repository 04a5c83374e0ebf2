package index

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestWalkHistoryIsHistoryOldestFirst: an address of a generated chain
// occurs in more blocks than a walk reads at a time (walkChunkBlocks). Its
// walk over the whole chain, and over a range cut inside chunks, gives
// History's transactions with the blocks oldest first (in a block, in the
// same order); a walk told to stop calls fn no more, and fn's error is
// the walk's.
func TestWalkHistoryIsHistoryOldestFirst(t *testing.T) {
	chain := genChain(3, 700)
	ix := bulkIndexed(t, chain)
	ctx := context.Background()
	addr := []byte{0x76, 0xa9, 1}
	oldestFirst := func(from, to uint32) []HistoryTx {
		h, err := ix.History(ctx, addr, 1, 1<<20, from, to)
		if err != nil {
			t.Fatal(err)
		}
		var blocks [][]HistoryTx
		for i, tx := range h.Txs {
			if i == 0 || tx.Height != h.Txs[i-1].Height {
				blocks = append(blocks, nil)
			}
			blocks[len(blocks)-1] = append(blocks[len(blocks)-1], tx)
		}
		slices.Reverse(blocks)
		return slices.Concat(blocks...)
	}
	walked := func(from, to uint32) []HistoryTx {
		var txs []HistoryTx
		err := ix.WalkHistory(ctx, addr, from, to, func(tx HistoryTx) (bool, error) {
			txs = append(txs, tx)
			return false, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return txs
	}
	same := func(a, b []HistoryTx) bool {
		return slices.EqualFunc(a, b, func(x, y HistoryTx) bool {
			return x.TxID == y.TxID && x.Height == y.Height && slices.Equal(x.Indexes, y.Indexes)
		})
	}
	all := oldestFirst(0, 0)
	blocks := map[uint32]bool{}
	for _, tx := range all {
		blocks[tx.Height] = true
	}
	if len(blocks) <= 2*walkChunkBlocks {
		t.Fatalf("the address is in %d blocks, want more than two chunks of %d", len(blocks), walkChunkBlocks)
	}
	for _, r := range [][2]uint32{{0, 0}, {0, 699}, {37, 612}, {300, 300}, {650, 0}, {700, 0}} {
		if want, got := oldestFirst(r[0], r[1]), walked(r[0], r[1]); !same(want, got) {
			t.Errorf("blocks %d to %d: walked %d transactions, want History's %d oldest first", r[0], r[1], len(got), len(want))
		}
	}
	calls := 0
	err := ix.WalkHistory(ctx, addr, 0, 0, func(HistoryTx) (bool, error) {
		calls++
		return calls == 300, nil
	})
	if err != nil || calls != 300 {
		t.Errorf("a walk stopped at the 300th transaction: %d calls, %v", calls, err)
	}
	mine := errors.New("fn's own")
	if err := ix.WalkHistory(ctx, addr, 0, 0, func(HistoryTx) (bool, error) { return false, mine }); !errors.Is(err, mine) {
		t.Errorf("fn's error: the walk returned %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := ix.WalkHistory(cancelled, addr, 0, 0, func(HistoryTx) (bool, error) { return false, nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("a walk with its context ended: %v", err)
	}
}
