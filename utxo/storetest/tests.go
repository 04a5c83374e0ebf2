package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

func testCreateAndGet(t *testing.T, open Opener) {
	s := open(t, utxo.Options{})
	must(t, s.Health(ctx), "health")
	parent, _ := parentAndSpender(t, s)
	m := mustGet(t, s, parent.ID)
	if m.TxID != parent.ID || len(m.Outputs) != 2 || m.Tx == nil || m.Tx.ID != parent.ID ||
		len(m.BlockIDs) != 1 || m.BlockHeights[0] != 10 || m.UnminedSince != 0 || m.SizeInBytes != uint64(len(parent.Raw)) {
		t.Fatalf("meta %+v", m)
	}
	if m.TxInpoints.Len() != 1 || m.TxInpoints.ParentTxHashes[0] != (chainhash.Hash{0xaa}) {
		t.Fatalf("inpoints %+v", m.TxInpoints)
	}
	_, err := s.Create(ctx, parent, 10)
	wantCode(t, err, model.ErrTxExists)
	_, err = s.Get(ctx, chainhash.Hash{0x01})
	wantCode(t, err, model.ErrTxNotFound)
}

// testCreateOptionsTakeEffect checks that every create option reaches the
// record, whichever side of a connection it was given on.
func testCreateOptionsTakeEffect(t *testing.T, open Opener) {
	s := open(t, utxo.Options{})
	from := []wire.OutPoint{{Hash: chainhash.Hash{0xab}}}
	locked, fee, conflicting := newTx("locked", from, 1, 1), newTx("fee", from, 1, 1), newTx("conflicting", from, 1, 1)
	asCoinbase, frozen := newTx("as coinbase", from, 1, 1), newTx("frozen", from, 1, 1)
	mustCreate(t, s, locked, 5, utxo.WithLocked())
	mustCreate(t, s, fee, 5, utxo.WithFee(1234))
	mustCreate(t, s, conflicting, 5, utxo.WithConflicting())
	mustCreate(t, s, asCoinbase, 5, utxo.WithCoinbase(true), mined(5))
	mustCreate(t, s, frozen, 5, utxo.WithFrozen())
	if m := mustGet(t, s, locked.ID); !m.Locked {
		t.Error("WithLocked: the transaction is not locked")
	}
	if m := mustGet(t, s, fee.ID); m.Fee != 1234 {
		t.Errorf("WithFee(1234): fee %d", m.Fee)
	}
	if m := mustGet(t, s, conflicting.ID); !m.Conflicting {
		t.Error("WithConflicting: the transaction is not conflicting")
	}
	if m := mustGet(t, s, asCoinbase.ID); !m.IsCoinbase || len(m.BlockIDs) != 1 || m.BlockIDs[0] != 6 {
		t.Errorf("WithCoinbase(true), mined at 5: coinbase %v, blocks %v", m.IsCoinbase, m.BlockIDs)
	}
	resp, err := s.GetSpend(ctx, &utxo.Spend{TxID: frozen.ID, Vout: 0})
	if err != nil || resp.Status != utxo.StatusFrozen {
		t.Errorf("WithFrozen: output 0 is %+v (%v)", resp, err)
	}
}

func testSpendOutcomes(t *testing.T, open Opener) {
	s := open(t, utxo.Options{})
	parent, child := parentAndSpender(t, s)

	if _, err := s.Spend(ctx, child); err != nil {
		t.Fatal(err)
	}
	// The same spend again is an idempotent success.
	if _, err := s.Spend(ctx, child); err != nil {
		t.Fatalf("same spend again: %v", err)
	}
	// Another spender gets SPENT, naming the holder.
	rival := newTx("rival", []wire.OutPoint{out(parent, 0)}, 1, 1)
	spends, err := s.Spend(ctx, rival)
	wantCode(t, err, model.ErrSpent)
	if spends[0].ConflictingTxID == nil || *spends[0].ConflictingTxID != child.ID {
		t.Fatalf("SPENT does not name the spender: %+v", spends[0])
	}
	var e *model.Error
	if !errors.As(err, &e) || e.Spending == nil || e.Spending.TxID != child.ID {
		t.Fatalf("SPENT error carries %v", e)
	}
	// All or nothing: output 1 is free but output 7 does not exist.
	partial := newTx("partial", []wire.OutPoint{out(parent, 1), out(parent, 7)}, 1, 1)
	spends, err = s.Spend(ctx, partial)
	wantCode(t, err, model.ErrUtxoNotFound)
	if spends[0].Err != nil || !errors.Is(spends[1].Err, model.ErrUtxoNotFound) {
		t.Fatalf("per-spend outcomes: %v / %v", spends[0].Err, spends[1].Err)
	}
	if sd := mustGet(t, s, parent.ID).Outputs[1].SpendingData; sd != nil {
		t.Fatal("a refused transaction left output 1 spent")
	}
	// A missing parent.
	orphan := newTx("orphan", []wire.OutPoint{{Hash: chainhash.Hash{0xee}}}, 1, 1)
	_, err = s.Spend(ctx, orphan)
	wantCode(t, err, model.ErrTxNotFound)
}

func testSpendChecksTheClaimedUTXOHash(t *testing.T, open Opener) {
	s := open(t, utxo.Options{})
	parent, child := parentAndSpender(t, s)
	wrong := []*wire.TxOut{{Value: parent.Msg.TxOut[0].Value, PkScript: []byte("not the script")}}
	_, err := s.Spend(ctx, child, utxo.WithPreviousOutputs(wrong))
	wantCode(t, err, model.ErrUtxoHashMismatch)
	if _, err := s.Spend(ctx, child, utxo.WithPreviousOutputs([]*wire.TxOut{parent.Msg.TxOut[0]})); err != nil {
		t.Fatalf("spend with the right claim: %v", err)
	}
}

func testCoinbaseMaturity(t *testing.T, open Opener) {
	s := open(t, utxo.Options{})
	cb := newTx("cb", nil, 1, 50e8)
	mustCreate(t, s, cb, 10, mined(10))
	spender := newTx("early", []wire.OutPoint{out(cb, 0)}, 1, 1)
	_, err := s.Spend(ctx, spender, utxo.WithBlockHeight(109))
	wantCode(t, err, model.ErrCoinbaseImmature)
	if _, err := s.Spend(ctx, spender, utxo.WithBlockHeight(110)); err != nil {
		t.Fatalf("spend at maturity: %v", err)
	}
}

func testLockedRefusesSpendsUnlessIgnored(t *testing.T, open Opener) {
	s := open(t, utxo.Options{})
	parent, child := parentAndSpender(t, s, utxo.WithLocked())
	// mined(...) unlocks: lock it again explicitly.
	must(t, s.SetLocked(ctx, []chainhash.Hash{parent.ID}, true), "lock")
	_, err := s.Spend(ctx, child)
	wantCode(t, err, model.ErrLocked)
	spends, err := s.Spend(ctx, child, utxo.IgnoreLocked())
	if err != nil {
		t.Fatalf("IgnoreLocked: %v", err)
	}
	must(t, s.Unspend(ctx, spends, false), "unspend")
	if sd := mustGet(t, s, parent.ID).Outputs[0].SpendingData; sd != nil {
		t.Fatalf("Unspend left output 0 spent by %s", sd.TxID)
	}
	must(t, s.SetLocked(ctx, []chainhash.Hash{parent.ID}, false), "unlock")
	if _, err := s.Spend(ctx, child); err != nil {
		t.Fatalf("spend once unlocked: %v", err)
	}
}

func testFreezeUnfreezeReassign(t *testing.T, open Opener) {
	s := open(t, utxo.Options{})
	parent, child := parentAndSpender(t, s)
	must(t, s.FreezeUTXOs(ctx, []*utxo.Spend{{TxID: parent.ID, Vout: 0}}), "freeze")
	_, err := s.Spend(ctx, child)
	wantCode(t, err, model.ErrFrozen)
	resp, err := s.GetSpend(ctx, &utxo.Spend{TxID: parent.ID, Vout: 0})
	if err != nil || resp.Status != utxo.StatusFrozen {
		t.Fatalf("GetSpend of a frozen output: %+v %v", resp, err)
	}
	wantCode(t, s.FreezeUTXOs(ctx, []*utxo.Spend{{TxID: parent.ID, Vout: 0}}), model.ErrAlreadyFrozen)
	must(t, s.UnFreezeUTXOs(ctx, []*utxo.Spend{{TxID: parent.ID, Vout: 0}}), "unfreeze")
	wantCode(t, s.UnFreezeUTXOs(ctx, []*utxo.Spend{{TxID: parent.ID, Vout: 0}}), model.ErrUtxoNotFrozen)

	// Reassignment: freeze, move to a new owner, spendable in the first
	// block after 1,000 blocks on.
	must(t, s.SetBlockHeight(ctx, 20), "set block height")
	must(t, s.FreezeUTXOs(ctx, []*utxo.Spend{{TxID: parent.ID, Vout: 1}}), "freeze output 1")
	newHash := chainhash.Hash{0x77}
	must(t, s.ReAssignUTXO(ctx, &utxo.Spend{TxID: parent.ID, Vout: 1}, &utxo.Spend{UTXOHash: &newHash}), "reassign")
	thief := newTx("new owner", []wire.OutPoint{out(parent, 1)}, 1, 1)
	spendAt := func(h uint32) error {
		_, err := s.Spend(ctx, thief, utxo.WithBlockHeight(h))
		return err
	}
	wantCode(t, spendAt(20+utxo.ReassignmentDelay), model.ErrFrozenUntil)
	if err := spendAt(20 + utxo.ReassignmentDelay + 1); err != nil {
		t.Fatalf("spend after the reassignment delay: %v", err)
	}
	if got := mustGet(t, s, parent.ID).Outputs[1].UTXOHash; got != newHash {
		t.Fatalf("reassigned output has hash %s", got)
	}
}

func testGetSpendStatuses(t *testing.T, open Opener) {
	s := open(t, utxo.Options{})
	parent, child := parentAndSpender(t, s)
	check := func(vout uint32, want utxo.OutputStatus) {
		t.Helper()
		resp, err := s.GetSpend(ctx, &utxo.Spend{TxID: parent.ID, Vout: vout})
		if err != nil || resp.Status != want {
			t.Fatalf("output %d: %+v %v, want %s", vout, resp, err, want)
		}
	}
	check(0, utxo.StatusUnspent)
	if _, err := s.Spend(ctx, child); err != nil {
		t.Fatal(err)
	}
	check(0, utxo.StatusSpent)
	_, err := s.GetSpend(ctx, &utxo.Spend{TxID: parent.ID, Vout: 5})
	wantCode(t, err, model.ErrUtxoNotFound)
}

// testMinedBatchAndDelete covers the batch reads, SetMinedMulti, the
// previous outputs of a spender and Delete.
func testMinedBatchAndDelete(t *testing.T, open Opener) {
	s := open(t, utxo.Options{})
	parent, child := parentAndSpender(t, s)
	mustCreate(t, s, child, 11)
	ids, err := s.SetMinedMulti(ctx, hashes(child), model.MinedBlockInfo{BlockID: 12, BlockHeight: 11, OnLongestChain: true})
	must(t, err, "set mined")
	if got := ids[child.ID]; len(got) != 1 || got[0] != 12 {
		t.Fatalf("SetMinedMulti: block IDs %v, want [12]", got)
	}
	missing := chainhash.Hash{0x5a}
	items := []*utxo.UnresolvedMetaData{{TxID: parent.ID, Idx: 0}, {TxID: missing, Idx: 1}, {TxID: child.ID, Idx: 2}}
	must(t, s.BatchDecorate(ctx, items), "batch decorate")
	if items[0].Err != nil || items[0].Meta == nil || len(items[0].Meta.BlockIDs) != 1 || items[0].Meta.BlockIDs[0] != 11 {
		t.Fatalf("BatchDecorate of the parent: %+v %v", items[0].Meta, items[0].Err)
	}
	wantCode(t, items[1].Err, model.ErrTxNotFound)
	if items[2].Err != nil || items[2].Meta == nil || len(items[2].Meta.BlockIDs) != 1 || items[2].Meta.BlockIDs[0] != 12 {
		t.Fatalf("BatchDecorate of the child: %+v %v", items[2].Meta, items[2].Err)
	}
	prev, err := s.PreviousOutputsDecorate(ctx, child)
	must(t, err, "previous outputs")
	if len(prev) != 1 || prev[0].Value != parent.Msg.TxOut[0].Value || string(prev[0].PkScript) != string(parent.Msg.TxOut[0].PkScript) {
		t.Fatalf("PreviousOutputsDecorate: %+v", prev)
	}
	must(t, s.Delete(ctx, child.ID), "delete")
	_, err = s.Get(ctx, child.ID)
	wantCode(t, err, model.ErrTxNotFound)
	must(t, s.Delete(ctx, child.ID), "delete of a deleted transaction")
}

// testUnminedIteratorAndQueries walks the unmined iterator before and
// after a transaction joins the longest chain.
func testUnminedIteratorAndQueries(t *testing.T, open Opener) {
	// The iterator yields in createdAt order: a clock that ticks on every
	// read makes that the order of creation.
	clock := time.UnixMilli(1_000_000)
	s := open(t, utxo.Options{Now: func() time.Time { clock = clock.Add(time.Second); return clock }})
	parent, _ := parentAndSpender(t, s)
	var unmined []*chain.Tx
	for i, tag := range []string{"u1", "u2"} {
		tx := newTx(tag, []wire.OutPoint{out(parent, uint32(i))}, 1, 1)
		mustCreate(t, s, tx, uint32(11+i))
		unmined = append(unmined, tx)
	}
	walk := func() []chainhash.Hash {
		t.Helper()
		it, err := s.GetUnminedTxIterator(ctx)
		must(t, err, "unmined iterator")
		var got []chainhash.Hash
		for {
			u, err := it.Next(ctx)
			must(t, err, "unmined iterator next")
			if u == nil {
				return got
			}
			got = append(got, u.TxID)
		}
	}
	if got := walk(); len(got) != 2 || got[0] != unmined[0].ID || got[1] != unmined[1].ID {
		t.Fatalf("unmined: %v, want %v", got, hashes(unmined...))
	}
	old, err := s.QueryOldUnminedTransactions(ctx, 11)
	if err != nil || len(old) != 1 || old[0] != unmined[0].ID {
		t.Fatalf("unmined at or before 11: %v %v", old, err)
	}
	must(t, s.MarkTransactionsOnLongestChain(ctx, hashes(unmined[0]), true), "mark on the longest chain")
	if got := walk(); len(got) != 1 || got[0] != unmined[1].ID {
		t.Fatalf("unmined after marking u1: %v, want [%s]", got, unmined[1].ID)
	}
}

// testConflictingSets marks a spender conflicting and reads the sets of
// its double spender.
func testConflictingSets(t *testing.T, open Opener) {
	s := open(t, utxo.Options{})
	parent, child := parentAndSpender(t, s)
	mustCreate(t, s, child, 11)
	if _, err := s.Spend(ctx, child); err != nil {
		t.Fatal(err)
	}
	double := newTx("double", []wire.OutPoint{out(parent, 0)}, 1, 1)
	mustCreate(t, s, double, 11, utxo.WithConflicting())
	children, err := s.GetConflictingChildren(ctx, parent.ID)
	must(t, err, "conflicting children")
	if !contains(children, double.ID) {
		t.Fatalf("conflicting children of the parent %v lack the double spender %s", children, double.ID)
	}
	counter, err := s.GetCounterConflicting(ctx, double.ID)
	must(t, err, "counter-conflicting")
	if !contains(counter, double.ID) || !contains(counter, child.ID) {
		t.Fatalf("counter-conflicting set %v, want the double spender and the child", counter)
	}
	spends, _, err := s.SetConflicting(ctx, hashes(child), true)
	must(t, err, "set conflicting")
	if len(spends) != 1 || spends[0].TxID != parent.ID || spends[0].Vout != 0 {
		t.Fatalf("SetConflicting returns the inputs %+v, want parent:0", spends)
	}
	if m := mustGet(t, s, child.ID); !m.Conflicting || m.DeleteAtHeight == 0 {
		t.Fatalf("a conflicting transaction: conflicting %v, DAH %d", m.Conflicting, m.DeleteAtHeight)
	}
}

func contains(hs []chainhash.Hash, h chainhash.Hash) bool {
	for _, x := range hs {
		if x == h {
			return true
		}
	}
	return false
}

// testPreservationAndHeights covers the chain height and median time and a
// preservation that expires.
func testPreservationAndHeights(t *testing.T, open Opener) {
	s := open(t, utxo.Options{})
	must(t, s.SetBlockHeight(ctx, 25), "set block height")
	must(t, s.SetMedianBlockTime(ctx, 1_700_000_000), "set median time")
	if h, mt := s.GetBlockHeight(), s.GetMedianBlockTime(); h != 25 || mt != 1_700_000_000 {
		t.Fatalf("height %d, median time %d", h, mt)
	}
	parent, _ := parentAndSpender(t, s)
	must(t, s.PreserveTransactions(ctx, hashes(parent), 30), "preserve")
	if m := mustGet(t, s, parent.ID); m.PreserveUntil != 30 {
		t.Fatalf("preserveUntil %d, want 30", m.PreserveUntil)
	}
	must(t, s.ProcessExpiredPreservations(ctx, 29), "expire at 29")
	if m := mustGet(t, s, parent.ID); m.PreserveUntil != 30 {
		t.Fatal("a preservation was lifted early")
	}
	must(t, s.ProcessExpiredPreservations(ctx, 30), "expire at 30")
	if m := mustGet(t, s, parent.ID); m.PreserveUntil != 0 {
		t.Fatalf("after expiry: preserveUntil %d", m.PreserveUntil)
	}
}

// testPaginatedTransaction stores a transaction over several records (the
// lock record pattern) and spends outputs of its first and last record.
func testPaginatedTransaction(t *testing.T, open Opener) {
	s := open(t, utxo.Options{UtxoBatchSize: 2})
	big := newTx("big", []wire.OutPoint{{Hash: chainhash.Hash{0xbb}}}, 5, 1e8)
	mustCreate(t, s, big, 10, mined(10))
	m := mustGet(t, s, big.ID)
	if len(m.Outputs) != 5 || m.Creating {
		t.Fatalf("a 5-output transaction over records of 2: %d outputs, creating %v", len(m.Outputs), m.Creating)
	}
	spender := newTx("both ends", []wire.OutPoint{out(big, 0), out(big, 4)}, 1, 1)
	if _, err := s.Spend(ctx, spender); err != nil {
		t.Fatal(err)
	}
	for vout, want := range map[uint32]utxo.OutputStatus{0: utxo.StatusSpent, 2: utxo.StatusUnspent, 4: utxo.StatusSpent} {
		resp, err := s.GetSpend(ctx, &utxo.Spend{TxID: big.ID, Vout: vout})
		if err != nil || resp.Status != want {
			t.Fatalf("output %d: %+v %v, want %s", vout, resp, err, want)
		}
	}
}
