package blockpath

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/internal/testlog"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// level expects the store, the index and the block store (those open) at
// block b, height h, and the path to need h+1 next.
func level(t *testing.T, p *Path, h uint32, b *chain.Block) {
	t.Helper()
	ctx := context.Background()
	l, err := p.Levels(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := Level{Tip: utxo.Tip{Height: h, Hash: b.Hash}, HasTip: true}
	if l.Store != want {
		t.Fatalf("the store is at %+v, want %+v", l.Store, want)
	}
	if l.Index != nil && *l.Index != want {
		t.Fatalf("the index is at %+v, want %+v", *l.Index, want)
	}
	if l.Blocks != nil && *l.Blocks != want {
		t.Fatalf("the block store is at %+v, want %+v", *l.Blocks, want)
	}
	if next, err := p.Next(ctx); err != nil || next != h+1 {
		t.Fatalf("Next is %d (%v), want %d", next, err, h+1)
	}
}

// onBranchA opens a data directory on sozu under --sync always, with the
// index and the block store, connects the test chains' branch A along its
// path, and closes it when the test ends.
func onBranchA(t *testing.T) (*testChains, *Path) {
	t.Helper()
	c := newTestChains(t)
	s := openDir(t, t.TempDir(), "sozu", engine.SyncAlways, true, true)
	t.Cleanup(func() { s.close(t) })
	p := s.path(t)
	connectAll(t, p, c.A, 0, len(c.A))
	return c, p
}

// TestConnectFeedsEveryStore: each block reaches the block store, the
// store and the index; a block the store holds again changes nothing.
func TestConnectFeedsEveryStore(t *testing.T) {
	c, p := onBranchA(t)
	tip := uint32(len(c.A) - 1)
	level(t, p, tip, c.A[tip])
	if err := p.Connect(context.Background(), c.A[5], 5); err != nil {
		t.Fatalf("the store's block 5 again: %v", err)
	}
	level(t, p, tip, c.A[tip])
	if b, ok, err := p.Kept(context.Background(), 5); err != nil || !ok || b.Hash != c.A[5].Hash {
		t.Fatalf("Kept(5): %v %v", ok, err)
	}
}

// TestABlockOfAnotherChainAtAHeldHeightIsRefused: a block at a height the
// store holds must be the store's.
func TestABlockOfAnotherChainAtAHeldHeightIsRefused(t *testing.T) {
	c, p := onBranchA(t)
	at := c.Fork + 1
	if err := p.Connect(context.Background(), c.B[at], at); !errors.Is(err, ErrOtherChain) {
		t.Fatalf("branch B's block at %d over branch A: %v, want ErrOtherChain", at, err)
	}
}

// TestARefusedBlockIsNotKept: a block the store refuses (it spends an
// output that does not exist) leaves the block store as it was.
func TestARefusedBlockIsNotKept(t *testing.T) {
	c := newTestChains(t)
	s := openDir(t, t.TempDir(), "sozu", engine.SyncAlways, true, true)
	defer s.close(t)
	p := s.path(t)
	connectAll(t, p, c.A, 0, 10)
	bad := block(t, c.A[9].Hash, 10, coinbase(10, 1), spend(wire.OutPoint{Hash: c.A[9].Txs[0].ID, Index: 7}, 50e8, 2))
	err := p.Connect(context.Background(), bad, 10)
	if _, isUtxoErr := errors.AsType[*model.Error](err); !isUtxoErr {
		t.Fatalf("a block spending a missing output: %v, want the store's refusal", err)
	}
	level(t, p, 9, c.A[9])
	connectAll(t, p, c.A, 10, 12)
	level(t, p, 11, c.A[11])
}

// TestABlockNotExtendingTheTipIsRefusedBeforeItIsKept: a block above the
// tip that is not the next one (a height skipped, or a parent other than
// the tip) is refused with utxo.ErrNotTip before the block store sees it.
// The block store's own refusal used to come first, an error a client of
// the daemon's ConnectBlock was told was the daemon's fault.
func TestABlockNotExtendingTheTipIsRefusedBeforeItIsKept(t *testing.T) {
	c := newTestChains(t)
	s := openDir(t, t.TempDir(), "sozu", engine.SyncBlock, true, true)
	defer s.close(t)
	p := s.path(t)
	connectAll(t, p, c.A, 0, 10)
	otherParent := block(t, c.A[8].Hash, 10, coinbase(10, 9))
	for name, tc := range map[string]struct {
		b      *chain.Block
		height uint32
	}{
		"a height skipped":          {c.A[11], 11},
		"the next block's, too far": {c.A[10], 12},
		"a parent below the tip":    {otherParent, 10},
	} {
		if err := p.Connect(context.Background(), tc.b, tc.height); !errors.Is(err, utxo.ErrNotTip) {
			t.Errorf("%s: %v, want utxo.ErrNotTip", name, err)
		}
		level(t, p, 9, c.A[9])
	}
	connectAll(t, p, c.A, 10, 12)
	level(t, p, 11, c.A[11])
}

// TestIndexCatchesUpFromTheBlockStore: an index three blocks behind the
// store (a crash between the store's write and the index's) is brought
// level by Open from the raw blocks the block store keeps.
func TestIndexCatchesUpFromTheBlockStore(t *testing.T) {
	c := newTestChains(t)
	dir := t.TempDir()
	s := openDir(t, dir, "sozu", engine.SyncAlways, true, true)
	connectAll(t, s.path(t), c.A, 0, 100)
	s.close(t)
	s = openDir(t, dir, "sozu", engine.SyncAlways, false, true) // the index misses three blocks
	connectAll(t, s.path(t), c.A, 100, 103)
	s.close(t)

	s = openDir(t, dir, "sozu", engine.SyncAlways, true, true)
	defer s.close(t)
	p := s.path(t)
	level(t, p, 102, c.A[102])
	connectAll(t, p, c.A, 103, len(c.A))
	level(t, p, uint32(len(c.A)-1), c.A[len(c.A)-1])
}

// TestIndexBehindTakesTheStoresBlocksAgain: without the raw blocks, an
// index behind the store is level only once the feeder sends the store's
// blocks again: until then any other block is refused with a BehindError
// naming the height to send, so the gap never grows.
func TestIndexBehindTakesTheStoresBlocksAgain(t *testing.T) {
	c := newTestChains(t)
	dir := t.TempDir()
	s := openDir(t, dir, "sozu", engine.SyncAlways, true, false)
	connectAll(t, s.path(t), c.A, 0, 7)
	s.close(t)
	s = openDir(t, dir, "sozu", engine.SyncAlways, false, false)
	connectAll(t, s.path(t), c.A, 7, 10)
	s.close(t)

	s = openDir(t, dir, "sozu", engine.SyncAlways, true, false)
	defer s.close(t)
	p := s.path(t)
	ctx := context.Background()
	if lag, err := p.Lag(ctx); err != nil || lag.Next != 7 || lag.Derived != "the address index" {
		t.Fatalf("Lag: %+v %v, want 7 and the address index", lag, err)
	}
	for _, h := range []uint32{10, 8} {
		var behind *BehindError
		if err := p.Connect(ctx, c.A[h], h); !errors.As(err, &behind) || behind.Next != 7 {
			t.Fatalf("block %d while the index lacks 7..9: %v, want a BehindError naming 7", h, err)
		}
	}
	connectAll(t, p, c.A, 7, 12)
	level(t, p, 11, c.A[11])
}

// TestDerivedStoresAheadAreRolledBack: an index and a block store holding
// blocks past the store's tip (a store that lost its last blocks in a
// --sync block crash) are rolled back to the store's tip by Open, and the
// blocks connected again reach all three.
func TestDerivedStoresAheadAreRolledBack(t *testing.T) {
	c := newTestChains(t)
	ahead := openDir(t, t.TempDir(), "sozu", engine.SyncAlways, true, true)
	connectAll(t, ahead.path(t), c.A, 0, 15)
	behind := openDir(t, t.TempDir(), "sozu", engine.SyncAlways, false, false)
	connectAll(t, behind.path(t), c.A, 0, 12)
	s := &dirStores{store: behind.store, index: ahead.index, blocks: ahead.blocks}
	defer s.close(t)
	defer ahead.store.Close()

	p := s.path(t)
	level(t, p, 11, c.A[11])
	connectAll(t, p, c.A, 12, 16)
	level(t, p, 15, c.A[15])
}

// TestDerivedStoresOffTheChainAreRolledBack: an index and a block store
// that hold another branch than the store's above the fork (a crash in
// the middle of a reorganisation under --sync block) are rolled back to
// the fork point and then follow the store's branch.
func TestDerivedStoresOffTheChainAreRolledBack(t *testing.T) {
	c := newTestChains(t)
	onB := openDir(t, t.TempDir(), "sozu", engine.SyncAlways, true, true)
	connectAll(t, onB.path(t), c.B, 0, len(c.A))
	onA := openDir(t, t.TempDir(), "sozu", engine.SyncAlways, false, false)
	connectAll(t, onA.path(t), c.A, 0, len(c.A))
	s := &dirStores{store: onA.store, index: onB.index, blocks: onB.blocks}
	defer s.close(t)
	defer onB.store.Close()

	p := s.path(t)
	ctx := context.Background()
	if lag, err := p.Lag(ctx); err != nil || lag.Next != c.Fork+1 {
		t.Fatalf("Lag: %+v %v, want the block after the fork, %d", lag, err, c.Fork+1)
	}
	connectAll(t, p, c.A, int(c.Fork+1), len(c.A))
	tip := uint32(len(c.A) - 1)
	level(t, p, tip, c.A[tip])
}

// TestReorgMovesEveryStore: a reorganisation from branch A to branch B
// moves the store, the index and the block store to B's tip, and Kept
// serves B's blocks.
func TestReorgMovesEveryStore(t *testing.T) {
	c, p := onBranchA(t)
	if err := follow(context.Background(), p, c.B, byHash(c.A, c.B)); err != nil {
		t.Fatal(err)
	}
	tip := uint32(len(c.B) - 1)
	level(t, p, tip, c.B[tip])
	for h := c.Fork + 1; h <= tip; h++ {
		if b, ok, err := p.Kept(context.Background(), h); err != nil || !ok || b.Hash != c.B[h].Hash {
			t.Fatalf("Kept(%d) after the reorganisation: %v %v", h, ok, err)
		}
	}
}

// TestAReorgIsHeardOfInOrder: the blocks a reorganisation disconnects
// are heard of tip first, then those it connects; a reorganisation that
// fails, and returns to the old branch, is heard of by neither.
func TestAReorgIsHeardOfInOrder(t *testing.T) {
	c, p := onBranchA(t)
	var heard []string
	p.OnConnect(func(_ context.Context, b utxo.Block) { heard = append(heard, fmt.Sprintf("+%d", b.Height)) })
	p.OnDisconnect(func(_ context.Context, b utxo.Block) { heard = append(heard, fmt.Sprintf("-%d", b.Height)) })
	first := c.B[c.Fork+1]
	bad := block(t, first.Hash, c.Fork+2, coinbase(c.Fork+2, 9), spend(wire.OutPoint{Hash: first.Txs[0].ID, Index: 3}, 50e8, 9))
	if err := p.Reorg(context.Background(), c.aboveFork(), []*chain.Block{first, bad}); err == nil {
		t.Fatal("a branch with a block spending a missing output was taken")
	}
	if len(heard) != 0 {
		t.Fatalf("a failed reorganisation was heard of: %v", heard)
	}
	if err := p.Reorg(context.Background(), c.aboveFork(), c.B[c.Fork+1:]); err != nil {
		t.Fatal(err)
	}
	var want []string
	for h := len(c.A) - 1; h > int(c.Fork); h-- {
		want = append(want, fmt.Sprintf("-%d", h))
	}
	for h := int(c.Fork) + 1; h < len(c.B); h++ {
		want = append(want, fmt.Sprintf("+%d", h))
	}
	if !slices.Equal(heard, want) {
		t.Fatalf("heard %v, want %v", heard, want)
	}
}

// TestAFailedReorgReturnsToTheOldBranch: a branch whose second block the
// store refuses leaves every store on the old branch's tip.
func TestAFailedReorgReturnsToTheOldBranch(t *testing.T) {
	c, p := onBranchA(t)
	first := c.B[c.Fork+1]
	bad := block(t, first.Hash, c.Fork+2, coinbase(c.Fork+2, 9), spend(wire.OutPoint{Hash: first.Txs[0].ID, Index: 3}, 50e8, 9))
	tip := uint32(len(c.A) - 1)
	disconnect := c.aboveFork()
	err := p.Reorg(context.Background(), disconnect, []*chain.Block{first, bad})
	if _, isUtxoErr := errors.AsType[*model.Error](err); !isUtxoErr {
		t.Fatalf("a branch with a block spending a missing output: %v, want the store's refusal", err)
	}
	level(t, p, tip, c.A[tip])
}

// TestABranchFailingTheChecksChangesNothing: every block of a branch is
// checked before anything is disconnected.
func TestABranchFailingTheChecksChangesNothing(t *testing.T) {
	c, p := onBranchA(t)
	broken := *c.B[c.Fork+2]
	broken.Header.MerkleRoot[0] ^= 1
	tip := uint32(len(c.A) - 1)
	disconnect := c.aboveFork()
	err := p.Reorg(context.Background(), disconnect, []*chain.Block{c.B[c.Fork+1], &broken})
	if _, failed := errors.AsType[*chain.CheckError](err); !failed {
		t.Fatalf("a branch with a block failing its checks: %v, want a CheckError", err)
	}
	level(t, p, tip, c.A[tip])
}

// TestADisconnectListOffTheStoresChainChangesNothing: a reorganisation
// whose blocks to disconnect are not the store's, below its tip (a
// feeder's stale idea of the chain), is refused before the first block
// is disconnected, with every store still at the tip.
func TestADisconnectListOffTheStoresChainChangesNothing(t *testing.T) {
	c, p := onBranchA(t)
	tip := uint32(len(c.A) - 1)
	disconnect := c.aboveFork()
	disconnect[1] = c.B[tip-1] // branch B's block at that height, not the store's
	err := p.Reorg(context.Background(), disconnect, c.B[c.Fork+1:])
	if !errors.Is(err, utxo.ErrNotTip) {
		t.Fatalf("a reorganisation disconnecting a block the store does not hold: %v, want ErrNotTip", err)
	}
	level(t, p, tip, c.A[tip])
}

// TestADisconnectedBlockFailingTheChecksChangesNothing: a block to
// disconnect with the tip's header but not its transactions (the tip's
// spend left out), what a peer may answer when the block store lacks the
// block, is refused before anything changes. Taken as given, the store
// would undo its coinbase alone, and the spend the tip made would stay
// done: an honest reorganisation after it ends with a coin too many.
func TestADisconnectedBlockFailingTheChecksChangesNothing(t *testing.T) {
	c := newTestChains(t)
	ctx := context.Background()
	tip := uint32(len(c.A) - 1)
	disconnect := c.aboveFork()
	if len(c.A[tip].Txs) < 2 {
		t.Fatalf("the tip of branch A holds %d transactions; the test needs one besides the coinbase", len(c.A[tip].Txs))
	}
	summaryAfterReorg := func(p *Path) utxo.Summary {
		t.Helper()
		if err := p.Reorg(ctx, disconnect, c.B[c.Fork+1:]); err != nil {
			t.Fatal(err)
		}
		sum, err := p.Store().Summary(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	clean := openDir(t, t.TempDir(), "sozu", engine.SyncAlways, true, true)
	defer clean.close(t)
	cp := clean.path(t)
	connectAll(t, cp, c.A, 0, len(c.A))
	want := summaryAfterReorg(cp)

	s := openDir(t, t.TempDir(), "sozu", engine.SyncAlways, true, true)
	defer s.close(t)
	p := s.path(t)
	connectAll(t, p, c.A, 0, len(c.A))
	forged := block(t, c.A[tip-1].Hash, tip, c.A[tip].Txs[0].Msg)
	forged.Header, forged.Hash, forged.Raw = c.A[tip].Header, c.A[tip].Hash, nil
	err := p.Reorg(ctx, append([]*chain.Block{forged}, disconnect[1:]...), c.B[c.Fork+1:])
	if _, failed := errors.AsType[*chain.CheckError](err); !failed {
		t.Fatalf("a block to disconnect with the tip's header and other transactions: %v, want a CheckError", err)
	}
	level(t, p, tip, c.A[tip])
	if got := summaryAfterReorg(p); got != want {
		t.Fatalf("after the refused and an honest reorganisation the store's set is %+v, want %+v, that of the honest one alone", got, want)
	}
}

// TestABlockRepeatingAMinedTransactionIsRefused: a block whose coinbase is
// one mined below it again, unspent (BIP30; regtest has no BIP34 height),
// is refused before anything changes. The store used to take it as that
// transaction mined a second time, one coin, while the index counted its
// outputs again: twice the balance.
func TestABlockRepeatingAMinedTransactionIsRefused(t *testing.T) {
	c := newTestChains(t)
	s := openDir(t, t.TempDir(), "sozu", engine.SyncAlways, true, true)
	defer s.close(t)
	p := s.path(t)
	connectAll(t, p, c.A, 0, 5)
	repeat := block(t, c.A[4].Hash, 5, c.A[3].Txs[0].Msg)
	err := p.Connect(context.Background(), repeat, 5)
	if ce, failed := errors.AsType[*chain.CheckError](err); !failed || ce.Check != chain.CheckRepeatedTx {
		t.Fatalf("a block repeating the coinbase of block 3: %v, want a CheckError of %q", err, chain.CheckRepeatedTx)
	}
	level(t, p, 4, c.A[4])
	if err := p.Connect(context.Background(), c.A[5], 5); err != nil {
		t.Fatalf("the chain's own block 5 after the refused one: %v", err)
	}
}

// failCheckpoint fails the engine's next checkpoint once armed: a block
// boundary's fsync that fails after the chain state was written.
type failCheckpoint struct {
	engine.Engine
	armed bool
}

func (f *failCheckpoint) Checkpoint(ctx context.Context, height uint32) error {
	if f.armed {
		f.armed = false
		return errors.New("injected: the checkpoint's fsync failed")
	}
	return f.Engine.Checkpoint(ctx, height)
}

// TestABlockTheStoreHoldsDespiteItsErrorIsKept: the store fails a block
// after its tip reached it (the block boundary's checkpoint). The block
// store keeps the raw block, which the store holds, and once reopened the
// path brings the index to it from there. The block store used to drop
// it, as for a block the store refused, and the index could then never
// reach the store's tip.
func TestABlockTheStoreHoldsDespiteItsErrorIsKept(t *testing.T) {
	c := newTestChains(t)
	ctx := context.Background()
	dir := t.TempDir()
	s := openDir(t, dir, "sozu", engine.SyncAlways, true, true)
	failing := &failCheckpoint{Engine: s.store.Engine()}
	store, err := utxo.Open(ctx, failing, utxo.Options{Network: "regtest"})
	if err != nil {
		t.Fatal(err)
	}
	s.store = store
	p := s.path(t)
	connectAll(t, p, c.A, 0, 5)
	failing.armed = true
	if err := p.Connect(ctx, c.A[5], 5); err == nil {
		t.Fatal("the injected checkpoint failure failed nothing")
	}
	if tip, _, err := store.Tip(ctx); err != nil || tip.Hash != c.A[5].Hash {
		t.Fatalf("the store's tip after its failed checkpoint: %+v (%v), want block 5: the test fails no block after the tip moved", tip, err)
	}
	if _, hash, ok, err := s.blocks.Block(5); err != nil || !ok || hash != c.A[5].Hash {
		t.Fatalf("the block store after the failure: block 5 %v (%v), want it kept, as the store holds it", ok, err)
	}
	// The store says again, closing, what failed; the others close clean.
	if err := errors.Join(s.index.Close(), s.blocks.Close()); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("closing the store whose checkpoint failed: %v", err)
	}
	s = openDir(t, dir, "sozu", engine.SyncAlways, true, true)
	defer s.close(t)
	level(t, s.path(t), 5, c.A[5])
}

// TestStepTimesCountEveryStoresShare: the path times each store's step and
// counts the blocks and transactions the index took, a reorganisation's
// included.
func TestStepTimesCountEveryStoresShare(t *testing.T) {
	c, p := onBranchA(t)
	if err := follow(context.Background(), p, c.B, byHash(c.A, c.B)); err != nil {
		t.Fatal(err)
	}
	var blocks, txs uint64
	for _, b := range append(append([]*chain.Block{}, c.A...), c.B[c.Fork+1:]...) {
		blocks, txs = blocks+1, txs+uint64(len(b.Txs))
	}
	st := p.StepTimes()
	if st.IndexedBlocks != blocks || st.IndexedTxs != txs {
		t.Fatalf("the index took %d blocks and %d transactions, want %d and %d", st.IndexedBlocks, st.IndexedTxs, blocks, txs)
	}
	if st.Check <= 0 || st.Keep <= 0 || st.Store <= 0 || st.Index <= 0 {
		t.Fatalf("a step was not timed: %+v", st)
	}
}

// TestHoldLeavesWhereTheStoresStandReadable: while a Hold runs, the path
// answers where the stores stand (Levels, Next), as a daemon's status does
// during a backup; a block sent meanwhile connects once the Hold returns.
func TestHoldLeavesWhereTheStoresStandReadable(t *testing.T) {
	c := newTestChains(t)
	s := openDir(t, t.TempDir(), "sozu", engine.SyncAlways, true, true)
	defer s.close(t)
	p := s.path(t)
	connectAll(t, p, c.A, 0, 5)
	done := make(chan error, 1)
	err := p.Hold(func() error {
		level(t, p, 4, c.A[4])
		go func() { done <- p.Connect(context.Background(), c.A[5], 5) }()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the block sent during the Hold: %v", err)
	}
	level(t, p, 5, c.A[5])
}

// TestFlushWritesABulkIndexAndGoesOn: a bulk index's blocks are in its
// database once Flush returns, timed as the index's, and the import takes
// the next blocks; without a bulk index Flush does nothing.
func TestFlushWritesABulkIndexAndGoesOn(t *testing.T) {
	c := newTestChains(t)
	s := openDir(t, t.TempDir(), "sozu", engine.SyncBlock, true, true)
	defer s.close(t)
	p, err := Open(context.Background(), Config{Store: s.store, Rules: rules, Blocks: s.blocks, Index: s.index, IndexBulk: 1000, Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	connectAll(t, p, c.A, 0, 3)
	if _, ok, err := s.index.BestBlock(); err != nil || ok {
		t.Fatalf("the index's database holds a block before the flush (ok %v, err %v)", ok, err)
	}
	before := p.StepTimes().Index
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	best, ok, err := s.index.BestBlock()
	if err != nil || !ok || best.Hash != c.A[2].Hash {
		t.Fatalf("after the flush the index's database is at %v (ok %v, err %v), want block 2 %s", best.Hash, ok, err, c.A[2].Hash)
	}
	if p.StepTimes().Index <= before {
		t.Fatal("the flush was not timed as the index's")
	}
	connectAll(t, p, c.A, 3, 5)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if best, _, err := s.index.BestBlock(); err != nil || best.Hash != c.A[4].Hash {
		t.Fatalf("after Close the index is at %v (err %v), want block 4 %s", best.Hash, err, c.A[4].Hash)
	}
	if err := s.path(t).Flush(); err != nil {
		t.Fatalf("Flush without a bulk index: %v", err)
	}
}
