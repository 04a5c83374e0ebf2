package utxo

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine/pebble"
	"github.com/utxostore/utxostore/utxo/model"
)

// parentAndSpender stores a mined two-output parent and returns it with a
// spender of its output 0.
func parentAndSpender(t *testing.T, db *DB, opts ...CreateOption) (*chain.Tx, *chain.Tx) {
	t.Helper()
	parent := spendTx("parent", []wire.OutPoint{{Hash: chainhash.Hash{0xaa}}}, 2, 10e8)
	mustCreate(t, db, parent, 10, append([]CreateOption{mined(10)}, opts...)...)
	return parent, spendTx("child", []wire.OutPoint{out(parent, 0)}, 1, 9e8)
}

func TestLockedAndConflictingRefuseSpends(t *testing.T) {
	db := newStore(t, Options{})
	parent, child := parentAndSpender(t, db, WithLocked())
	// mined(...) unlocks: lock it again explicitly.
	if err := db.SetLocked(ctx, []chainhash.Hash{parent.ID}, true); err != nil {
		t.Fatal(err)
	}
	_, err := db.Spend(ctx, child)
	wantCode(t, err, model.ErrLocked)
	if _, err := db.Spend(ctx, child, IgnoreLocked()); err != nil {
		t.Fatalf("IgnoreLocked: %v", err)
	}
	spends, _ := spendsOf(child, nil)
	if err := db.Unspend(ctx, spends, false); err != nil {
		t.Fatal(err)
	}
	if err := db.SetLocked(ctx, []chainhash.Hash{parent.ID}, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.SetConflicting(ctx, []chainhash.Hash{parent.ID}, true); err != nil {
		t.Fatal(err)
	}
	_, err = db.Spend(ctx, child)
	wantCode(t, err, model.ErrConflicting)
	if m := mustGet(t, db, parent.ID); m.DeleteAtHeight == 0 {
		t.Fatal("a conflicting transaction is not scheduled for deletion")
	}
}

func TestUnminedLifecycle(t *testing.T) { testUnminedLifecycle(t, onMemory) }

func testUnminedLifecycle(t *testing.T, open engineOpener) {
	clock := time.UnixMilli(1_000_000)
	db := newStoreOn(t, open, Options{BlockHeightRetention: 20, Now: func() time.Time { clock = clock.Add(time.Second); return clock }})
	parent, _ := parentAndSpender(t, db)
	// Three unmined transactions created in order, at heights 11, 12, 13.
	var unmined []*chain.Tx
	for i, tag := range []string{"u1", "u2", "u3"} {
		tx := spendTx(tag, []wire.OutPoint{out(parent, uint32(i%2))}, 1, 1)
		if _, err := db.Create(ctx, tx, uint32(11+i)); err != nil {
			t.Fatal(err)
		}
		unmined = append(unmined, tx)
	}
	// u2 also spends its input, which cleanup must release.
	if _, err := db.Spend(ctx, unmined[1]); err != nil {
		t.Fatal(err)
	}
	it, err := db.GetUnminedTxIterator(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range unmined {
		u, err := it.Next(ctx)
		if err != nil || u == nil || u.TxID != unmined[i].ID {
			t.Fatalf("iterator item %d: %+v %v, want %s", i, u, err, unmined[i].ID)
		}
	}
	if u, _ := it.Next(ctx); u != nil {
		t.Fatal("the iterator yielded a mined transaction")
	}
	old, err := db.QueryOldUnminedTransactions(ctx, 12)
	if err != nil || len(old) != 2 {
		t.Fatalf("unmined at or before 12: %v %v", old, err)
	}
	// Mark one mined on the longest chain and another back off it.
	if err := db.MarkTransactionsOnLongestChain(ctx, []chainhash.Hash{unmined[0].ID}, true); err != nil {
		t.Fatal(err)
	}
	if m := mustGet(t, db, unmined[0].ID); m.UnminedSince != 0 {
		t.Fatal("MarkTransactionsOnLongestChain(true) left it unmined")
	}
	// Cleanup after the unmined retention (half of 20): u2 and u3 are old
	// at height 24 (stored at 12 and 13 ≤ 24-10); their parent is
	// preserved.
	removed, err := db.CleanupOldUnmined(ctx, 24)
	if err != nil || len(removed) != 2 {
		t.Fatalf("cleanup removed %v (%v)", removed, err)
	}
	if m := mustGet(t, db, parent.ID); m.PreserveUntil != 24+DefaultParentPreservation || m.DeleteAtHeight != 0 {
		t.Fatalf("parent preserveUntil %d, DAH %d", m.PreserveUntil, m.DeleteAtHeight)
	}
	for _, tx := range unmined[1:] {
		_, err := db.Get(ctx, tx.ID)
		wantCode(t, err, model.ErrTxNotFound)
	}
	if sd := mustGet(t, db, parent.ID).Outputs[1].SpendingData; sd != nil {
		t.Fatalf("the output a removed transaction spent is still spent by %s", sd.TxID)
	}
}

// TestSetBlockHeightRunsWhatItMakesDue: a client that drives the height
// itself, as Teranode's block assembly does (Spend, SetMinedMulti,
// SetBlockHeight, no ConnectBlock), gets what a connected block gets: a
// fully spent mined transaction is pruned and recorded among its parents'
// deleted children, and an old unmined transaction is cleaned up with its
// spend freed. SetBlockHeight used to pass the height to the engine alone:
// the memory engine never pruned, and one that purges by itself took C
// unrecorded, so P:0 read as spent by a transaction never created.
func TestSetBlockHeightRunsWhatItMakesDue(t *testing.T) {
	for name, open := range map[string]engineOpener{"memory": onMemory, "purging at once": onPurgingAtOnce} {
		t.Run(name, func(t *testing.T) { testSetBlockHeightRunsWhatItMakesDue(t, open) })
	}
}

func testSetBlockHeightRunsWhatItMakesDue(t *testing.T, open engineOpener) {
	db := newStoreOn(t, open, Options{BlockHeightRetention: 4, UnminedRetention: 2})
	setHeight := func(h uint32) {
		t.Helper()
		if err := db.SetBlockHeight(ctx, h); err != nil {
			t.Fatalf("set block height %d: %v", h, err)
		}
	}
	setHeight(1)
	p := spendTx("P", []wire.OutPoint{{Hash: chainhash.Hash{0xa1}}}, 2, 5e8)
	mustCreate(t, db, p, 1, mined(1))
	c := spendTx("C", []wire.OutPoint{out(p, 0)}, 1, 4e8)
	d := spendTx("D", []wire.OutPoint{out(c, 0)}, 1, 3e8)
	u := spendTx("U", []wire.OutPoint{out(p, 1)}, 1, 4e8)
	for i, tx := range []*chain.Tx{c, d, u} {
		mustCreate(t, db, tx, 1)
		if _, err := db.Spend(ctx, tx); err != nil {
			t.Fatal(err)
		}
		if tx == u {
			break
		}
		h := uint32(2 + i)
		if _, err := db.SetMinedMulti(ctx, []chainhash.Hash{tx.ID}, model.MinedBlockInfo{BlockID: h + 1, BlockHeight: h, OnLongestChain: true}); err != nil {
			t.Fatal(err)
		}
		setHeight(h)
	}
	h := db.GetBlockHeight()
	for ; h < 20; h++ {
		if _, err := db.Get(ctx, c.ID); errors.Is(err, model.ErrTxNotFound) {
			break
		}
		setHeight(h + 1)
	}
	if _, err := db.Get(ctx, c.ID); !errors.Is(err, model.ErrTxNotFound) {
		t.Fatalf("C at height %d: %v, want it pruned", h, err)
	}
	if err := db.Unspend(ctx, []*Spend{{TxID: p.ID, Vout: 0}}, false); !errors.Is(err, model.ErrSpent) || !strings.Contains(err.Error(), "since pruned") {
		t.Fatalf("Unspend of P:0: %v, want SPENT, by C since pruned", err)
	}
	if _, err := db.Get(ctx, u.ID); !errors.Is(err, model.ErrTxNotFound) {
		t.Fatalf("U, unmined since 1, at height %d: %v, want it cleaned up", h, err)
	}
	if sd := mustGet(t, db, p.ID).Outputs[1].SpendingData; sd != nil {
		t.Fatalf("P:1 is still spent by %s, whom the cleanup removed", sd.TxID)
	}
	mustGet(t, db, d.ID) // mined and unspent, it stays
}

// TestOptionsKeepTheLeastRetention: a block height retention under
// MinBlockHeightRetention is raised to it. With 2, a store killed inside
// the block that pruned an output a block two below had spent could not
// reopen: the statistics of that block, left pending, read the output back.
func TestOptionsKeepTheLeastRetention(t *testing.T) {
	for asked, want := range map[uint32]uint32{1: 4, 2: 4, 3: 4, 4: 4, 10: 10} {
		if got := (Options{BlockHeightRetention: asked}).withDefaults().BlockHeightRetention; got != want {
			t.Errorf("a block height retention of %d is %d, want %d", asked, got, want)
		}
	}
}

func TestPreservationExpires(t *testing.T) {
	db := newStore(t, Options{BlockHeightRetention: 5})
	parent, _ := parentAndSpender(t, db)
	both := spendTx("both", []wire.OutPoint{out(parent, 0), out(parent, 1)}, 1, 1)
	if _, err := db.Spend(ctx, both, WithBlockHeight(12)); err != nil {
		t.Fatal(err)
	}
	if m := mustGet(t, db, parent.ID); m.DeleteAtHeight != 17 {
		t.Fatalf("fully spent parent DAH %d, want 17", m.DeleteAtHeight)
	}
	if err := db.PreserveTransactions(ctx, []chainhash.Hash{parent.ID}, 30); err != nil {
		t.Fatal(err)
	}
	if m := mustGet(t, db, parent.ID); m.DeleteAtHeight != 0 || m.PreserveUntil != 30 {
		t.Fatalf("preserved: DAH %d preserveUntil %d", m.DeleteAtHeight, m.PreserveUntil)
	}
	if res, _ := db.Prune(ctx, 20); res.Records != 0 {
		t.Fatal("a preserved transaction was pruned")
	}
	if err := db.ProcessExpiredPreservations(ctx, 29); err != nil {
		t.Fatal(err)
	}
	if m := mustGet(t, db, parent.ID); m.PreserveUntil != 30 {
		t.Fatal("a preservation was lifted early")
	}
	if err := db.ProcessExpiredPreservations(ctx, 30); err != nil {
		t.Fatal(err)
	}
	if m := mustGet(t, db, parent.ID); m.PreserveUntil != 0 || m.DeleteAtHeight == 0 {
		t.Fatalf("after expiry: preserveUntil %d DAH %d", m.PreserveUntil, m.DeleteAtHeight)
	}
}

func TestOpenRefusesAnotherNetworkOrFormat(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pebble")
	open := func(network string) (*DB, error) {
		eng, err := pebble.Open(dir, pebble.Options{})
		if err != nil {
			t.Fatal(err)
		}
		db, err := Open(ctx, eng, Options{Network: network})
		if err != nil {
			eng.Close()
		}
		return db, err
	}
	db, err := open("mainnet")
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, db, coinbaseTx("kept", 1, 1), 0, mined(0))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	var stateErr *StateError
	if _, err := open("testnet"); !errors.As(err, &stateErr) || stateErr.Field != "network" {
		t.Fatalf("opening mainnet data as testnet: %v", err)
	}
	// A store of another format version.
	eng, _ := pebble.Open(dir, pebble.Options{})
	if err := eng.PutMeta(ctx, metaInternalState, []byte(`{"format":99,"network":"mainnet","engine":"pebble","dbState":"closed"}`)); err != nil {
		t.Fatal(err)
	}
	eng.Close()
	if _, err := open("mainnet"); !errors.As(err, &stateErr) || stateErr.Field != "format" {
		t.Fatalf("opening format 99: %v", err)
	}
	eng, _ = pebble.Open(dir, pebble.Options{})
	raw, _ := eng.GetMeta(ctx, metaInternalState)
	eng.Close()
	if string(raw) != `{"format":99,"network":"mainnet","engine":"pebble","dbState":"closed"}` {
		t.Fatalf("a refused open changed the internal state to %s", raw)
	}
}

func TestUncleanShutdownIsDetected(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pebble")
	eng, err := pebble.Open(dir, pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, eng, Options{})
	if err != nil || db.UncleanShutdown {
		t.Fatalf("first open: %v, unclean %v", err, db.UncleanShutdown)
	}
	// Close the engine without closing the store: dbState stays "open".
	eng.Close()
	eng, _ = pebble.Open(dir, pebble.Options{})
	db, err = Open(ctx, eng, Options{})
	if err != nil || !db.UncleanShutdown {
		t.Fatalf("reopen after an unclean shutdown: %v, unclean %v", err, db != nil && db.UncleanShutdown)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	eng, _ = pebble.Open(dir, pebble.Options{})
	db, err = Open(ctx, eng, Options{})
	if err != nil || db.UncleanShutdown {
		t.Fatalf("reopen after a clean close: %v", err)
	}
	db.Close()
}
