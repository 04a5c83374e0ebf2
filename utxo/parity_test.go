package utxo

import (
	"errors"
	"slices"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo/model"
)

// The tests of this file pin the behaviours where the store follows the
// reference implementation's UTXO store (bsv-blockchain/teranode,
// stores/utxo at commit fb3d000) on a point its data model leaves open.
// Each names the behaviour.

// mustSpend spends tx's inputs and fails the test on any refusal.
func mustSpend(t *testing.T, db *DB, tx *chain.Tx, opts ...SpendOption) {
	t.Helper()
	if _, err := db.Spend(ctx, tx, opts...); err != nil {
		t.Fatalf("spend %s: %v", tx.ID, err)
	}
}

func mustSetHeight(t *testing.T, db *DB, height uint32) {
	t.Helper()
	if err := db.SetBlockHeight(ctx, height); err != nil {
		t.Fatal(err)
	}
}

// sortedHashes returns hs in a fixed order, for comparing sets.
func sortedHashes(hs []chainhash.Hash) []chainhash.Hash {
	out := slices.Clone(hs)
	slices.SortFunc(out, func(a, b chainhash.Hash) int { return slices.Compare(a[:], b[:]) })
	return out
}

func wantSet(t *testing.T, what string, got []chainhash.Hash, want ...chainhash.Hash) {
	t.Helper()
	if !slices.Equal(sortedHashes(got), sortedHashes(want)) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

// Behaviour 1: a reassigned output is refused with FROZEN_UNTIL while its
// spendable-in height is >= the spending block's height (store height + 1).
func TestReassignedOutputIsHeldThroughItsSpendableInHeight(t *testing.T) {
	testReassignedOutputIsHeldThroughItsSpendableInHeight(t, onMemory)
}

func testReassignedOutputIsHeldThroughItsSpendableInHeight(t *testing.T, open engineOpener) {
	db := newStoreOn(t, open, Options{})
	parent, child := parentAndSpender(t, db)
	mustSetHeight(t, db, 101)
	target := &Spend{TxID: parent.ID, Vout: 0}
	if err := db.FreezeUTXOs(ctx, []*Spend{target}); err != nil {
		t.Fatal(err)
	}
	newHash := chainhash.Hash{0x42}
	if err := db.ReAssignUTXO(ctx, target, &Spend{UTXOHash: &newHash}); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, db, parent.ID).Outputs[0].SpendableIn; got != 101+ReassignmentDelay {
		t.Fatalf("spendableIn %d, want %d", got, 101+ReassignmentDelay)
	}
	mustSetHeight(t, db, 1100) // the next block is 1101 = spendableIn
	_, err := db.Spend(ctx, child)
	wantCode(t, err, model.ErrFrozenUntil)
	mustSetHeight(t, db, 1101)
	mustSpend(t, db, child)
}

// Behaviour 2: creating a transaction as conflicting records it among its
// parents' conflictingChildren; a parent that is not stored is skipped.
func TestCreateConflictingRecordsItAmongItsParentsConflictingChildren(t *testing.T) {
	testCreateConflictingRecordsItAmongItsParentsConflictingChildren(t, onMemory)
}

func testCreateConflictingRecordsItAmongItsParentsConflictingChildren(t *testing.T, open engineOpener) {
	db := newStoreOn(t, open, Options{})
	parent, child := parentAndSpender(t, db)
	other := spendTx("other parent", []wire.OutPoint{{Hash: chainhash.Hash{0xbb}}}, 1, 1e8)
	mustCreate(t, db, other, 10, mined(10))
	double := spendTx("double", []wire.OutPoint{out(parent, 0), out(other, 0), {Hash: chainhash.Hash{0xee}}}, 1, 1e8)
	mustCreate(t, db, child, 11)
	mustCreate(t, db, double, 11, WithConflicting())
	for _, p := range []*chain.Tx{parent, other} {
		wantSet(t, "conflicting children of a parent", mustGet(t, db, p.ID).ConflictingChildren, double.ID)
	}
	if m := mustGet(t, db, double.ID); !m.Conflicting || len(m.ConflictingChildren) != 0 {
		t.Fatalf("the conflicting transaction: conflicting %v, children %v", m.Conflicting, m.ConflictingChildren)
	}
}

// Behaviour 3: zero-value OP_RETURN and OP_FALSE OP_RETURN outputs are not
// UTXOs, in a coinbase too, so a coinbase whose other outputs are spent is
// fully spent and scheduled for deletion.
func TestZeroValueDataOutputsOfACoinbaseAreNotUTXOs(t *testing.T) {
	db := newStore(t, Options{BlockHeightRetention: 5})
	cb := coinbaseTx("cb with data", 1, 50e8)
	cb.Msg.AddTxOut(&wire.TxOut{Value: 0, PkScript: []byte{0x6a, 0x04, 'd', 'a', 't', 'a'}})
	cb.Msg.AddTxOut(&wire.TxOut{Value: 0, PkScript: []byte{0x00, 0x6a, 0x04, 'd', 'a', 't', 'a'}})
	cb = chain.NewTx(cb.Msg)
	mustCreate(t, db, cb, 10, mined(10))
	outs := mustGet(t, db, cb.ID).Outputs
	if !outs[0].Stored || outs[1].Stored || outs[2].Stored {
		t.Fatalf("stored flags %v %v %v, want true false false", outs[0].Stored, outs[1].Stored, outs[2].Stored)
	}
	mustSpend(t, db, spendTx("cb spender", []wire.OutPoint{out(cb, 0)}, 1, 1), WithBlockHeight(110))
	if m := mustGet(t, db, cb.ID); m.DeleteAtHeight != 115 {
		t.Fatalf("fully spent coinbase DAH %d, want 115", m.DeleteAtHeight)
	}
}

// Behaviour 4: once a spending child is pruned, its parent remembers it,
// and spending the output again with the same spending data is refused
// with INVALID_SPEND instead of being taken as the idempotent re-spend.
func TestRespendByADeletedChildIsInvalidSpend(t *testing.T) {
	testRespendByADeletedChildIsInvalidSpend(t, onMemory)
}

func testRespendByADeletedChildIsInvalidSpend(t *testing.T, open engineOpener) {
	db := newStoreOn(t, open, Options{BlockHeightRetention: 5})
	parent, child := parentAndSpender(t, db)
	mustCreate(t, db, child, 11, mined(11))
	mustSpend(t, db, child, WithBlockHeight(11))
	mustSpend(t, db, spendTx("grandchild", []wire.OutPoint{out(child, 0)}, 1, 1), WithBlockHeight(12))
	if m := mustGet(t, db, child.ID); m.DeleteAtHeight != 17 {
		t.Fatalf("fully spent child DAH %d, want 17", m.DeleteAtHeight)
	}
	if _, err := db.Prune(ctx, 17); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get(ctx, child.ID); !errors.Is(err, model.ErrTxNotFound) {
		t.Fatalf("the child was not pruned: %v", err)
	}
	spends, err := db.Spend(ctx, child)
	wantCode(t, err, model.ErrInvalidSpend)
	if !errors.Is(spends[0].Err, model.ErrInvalidSpend) {
		t.Fatalf("the spend of the parent output: %v", spends[0].Err)
	}
	if sd := mustGet(t, db, parent.ID).Outputs[0].SpendingData; sd == nil || sd.TxID != child.ID {
		t.Fatalf("the refused re-spend changed the parent output: %v", sd)
	}
}

// Behaviour 5: the delete-at-height rule needs the transaction's blocks,
// not the longest chain, and MarkTransactionsOnLongestChain(false) keeps an
// existing delete-at-height.
func TestDeleteAtHeightNeedsBlocksNotTheLongestChain(t *testing.T) {
	testDeleteAtHeightNeedsBlocksNotTheLongestChain(t, onMemory)
}

func testDeleteAtHeightNeedsBlocksNotTheLongestChain(t *testing.T, open engineOpener) {
	db := newStoreOn(t, open, Options{BlockHeightRetention: 5})
	parent, _ := parentAndSpender(t, db)
	both := spendTx("both", []wire.OutPoint{out(parent, 0), out(parent, 1)}, 1, 1)
	mustSpend(t, db, both, WithBlockHeight(12))
	if m := mustGet(t, db, parent.ID); m.DeleteAtHeight != 17 {
		t.Fatalf("fully spent parent DAH %d, want 17", m.DeleteAtHeight)
	}
	mustSetHeight(t, db, 13)
	if err := db.MarkTransactionsOnLongestChain(ctx, []chainhash.Hash{parent.ID}, false); err != nil {
		t.Fatal(err)
	}
	if m := mustGet(t, db, parent.ID); m.UnminedSince != 13 || m.DeleteAtHeight != 17 {
		t.Fatalf("off the longest chain: unminedSince %d DAH %d, want 13 and 17", m.UnminedSince, m.DeleteAtHeight)
	}
	// Off the longest chain but still in a block: a spend that completes
	// it again schedules it.
	spends, _ := spendsOf(both, nil)
	if err := db.Unspend(ctx, spends[:1], false); err != nil {
		t.Fatal(err)
	}
	if m := mustGet(t, db, parent.ID); m.DeleteAtHeight != 0 {
		t.Fatalf("no longer fully spent, DAH %d", m.DeleteAtHeight)
	}
	mustSpend(t, db, both, WithBlockHeight(20))
	if m := mustGet(t, db, parent.ID); m.DeleteAtHeight != 25 {
		t.Fatalf("fully spent again off the longest chain: DAH %d, want 25", m.DeleteAtHeight)
	}
}

// Behaviour 6: the unmined iterator does not yield conflicting transactions.
func TestUnminedIteratorSkipsConflictingTransactions(t *testing.T) {
	testUnminedIteratorSkipsConflictingTransactions(t, onMemory)
}

func testUnminedIteratorSkipsConflictingTransactions(t *testing.T, open engineOpener) {
	db := newStoreOn(t, open, Options{})
	parent, child := parentAndSpender(t, db)
	double := spendTx("double", []wire.OutPoint{out(parent, 0)}, 1, 1)
	mustCreate(t, db, child, 11)
	mustCreate(t, db, double, 11, WithConflicting())
	it, err := db.GetUnminedTxIterator(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []chainhash.Hash
	for {
		u, err := it.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if u == nil {
			break
		}
		got = append(got, u.TxID)
	}
	wantSet(t, "unmined transactions", got, child.ID)
}

// Behaviour 7: unsetting a block on a transaction that is not stored is a
// successful no-op; setting one still reports TX_NOT_FOUND.
func TestUnsetMinedOfAMissingTransactionSucceeds(t *testing.T) {
	testUnsetMinedOfAMissingTransactionSucceeds(t, onMemory)
}

func testUnsetMinedOfAMissingTransactionSucceeds(t *testing.T, open engineOpener) {
	db := newStoreOn(t, open, Options{})
	parent, _ := parentAndSpender(t, db)
	missing := chainhash.Hash{0x0d}
	ids, err := db.SetMinedMulti(ctx, []chainhash.Hash{missing, parent.ID}, model.MinedBlockInfo{BlockID: 11, BlockHeight: 10, UnsetMined: true})
	if err != nil {
		t.Fatalf("unset mined with a missing transaction: %v", err)
	}
	if len(ids[parent.ID]) != 0 {
		t.Fatalf("the stored transaction kept blocks %v", ids[parent.ID])
	}
	_, err = db.SetMinedMulti(ctx, []chainhash.Hash{missing}, model.MinedBlockInfo{BlockID: 12, BlockHeight: 11})
	wantCode(t, err, model.ErrTxNotFound)
}

// Behaviour 8: a spend whose parent is gone is refused with TX_NOT_FOUND
// even when the spending transaction is already stored (the SQL store's
// answer; see Spend's doc comment for why the Aerospike store's
// forgiveness is not followed).
func TestSpendOfAGoneParentIsRefusedEvenWhenTheSpenderIsStored(t *testing.T) {
	db := newStore(t, Options{})
	parent, _ := parentAndSpender(t, db)
	orphan := spendTx("orphan", []wire.OutPoint{out(parent, 1), {Hash: chainhash.Hash{0xee}}}, 1, 1)
	mustCreate(t, db, orphan, 11)
	spends, err := db.Spend(ctx, orphan)
	wantCode(t, err, model.ErrTxNotFound)
	if spends[0].Err != nil || !errors.Is(spends[1].Err, model.ErrTxNotFound) {
		t.Fatalf("per-spend outcomes: %v / %v", spends[0].Err, spends[1].Err)
	}
	if sd := mustGet(t, db, parent.ID).Outputs[1].SpendingData; sd != nil {
		t.Fatal("the refused transaction left its other input spent")
	}
}

// Behaviour 9a: a coinbase matures 100 blocks after Create's block height,
// whatever the height of the block that mines it.
func TestCoinbaseMaturityCountsFromCreateHeight(t *testing.T) {
	db := newStore(t, Options{})
	early := coinbaseTx("created at 5, mined at 50", 1, 50e8)
	mustCreate(t, db, early, 5, WithMinedBlockInfo(model.MinedBlockInfo{BlockID: 51, BlockHeight: 50, OnLongestChain: true}))
	if got := mustGet(t, db, early.ID).SpendingHeight; got != 105 {
		t.Fatalf("spending height %d, want 105", got)
	}
	later := coinbaseTx("created unmined at 5", 1, 50e8)
	mustCreate(t, db, later, 5)
	if _, err := db.SetMinedMulti(ctx, []chainhash.Hash{later.ID}, model.MinedBlockInfo{BlockID: 51, BlockHeight: 50, OnLongestChain: true}); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, db, later.ID).SpendingHeight; got != 105 {
		t.Fatalf("spending height after set-mined %d, want 105", got)
	}
}

// Behaviour 9b: unsetting a transaction's last block makes it unmined since
// the store height + 1.
func TestUnsetMinedOfTheLastBlockSetsUnminedSinceToTheNextHeight(t *testing.T) {
	db := newStore(t, Options{})
	parent, _ := parentAndSpender(t, db)
	mustSetHeight(t, db, 50)
	if _, err := db.SetMinedMulti(ctx, []chainhash.Hash{parent.ID}, model.MinedBlockInfo{BlockID: 11, BlockHeight: 10, UnsetMined: true}); err != nil {
		t.Fatal(err)
	}
	if m := mustGet(t, db, parent.ID); m.UnminedSince != 51 || len(m.BlockIDs) != 0 {
		t.Fatalf("unminedSince %d, blocks %v; want 51 and none", m.UnminedSince, m.BlockIDs)
	}
}

// Behaviour 9c: MarkTransactionsOnLongestChain(false) sets unminedSince to
// the store height even when the transaction was already unmined.
func TestMarkOffTheLongestChainOverwritesUnminedSince(t *testing.T) {
	db := newStore(t, Options{})
	_, child := parentAndSpender(t, db)
	mustCreate(t, db, child, 12)
	mustSetHeight(t, db, 40)
	if err := db.MarkTransactionsOnLongestChain(ctx, []chainhash.Hash{child.ID}, false); err != nil {
		t.Fatal(err)
	}
	if m := mustGet(t, db, child.ID); m.UnminedSince != 40 {
		t.Fatalf("unminedSince %d, want 40", m.UnminedSince)
	}
}

// Behaviour 9d: deleting a transaction that is not stored succeeds.
func TestDeleteOfAMissingTransactionSucceeds(t *testing.T) {
	db := newStore(t, Options{})
	if err := db.Delete(ctx, chainhash.Hash{0x0d}); err != nil {
		t.Fatalf("delete of a missing transaction: %v", err)
	}
}

// Behaviour 10a: SetConflicting returns the inputs of the marked
// transactions and the transactions spending their outputs, so that a
// recursive marker can walk down.
func TestSetConflictingReturnsTheSpendersOfTheMarkedOutputs(t *testing.T) {
	db := newStore(t, Options{})
	parent, child := parentAndSpender(t, db)
	grandchild := spendTx("grandchild", []wire.OutPoint{out(child, 0)}, 1, 1)
	for _, tx := range []*chain.Tx{child, grandchild} {
		mustCreate(t, db, tx, 11)
		mustSpend(t, db, tx)
	}
	spends, affected, err := db.SetConflicting(ctx, []chainhash.Hash{child.ID}, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(spends) != 1 || spends[0].TxID != parent.ID || spends[0].Vout != 0 || spends[0].SpendingData.TxID != child.ID {
		t.Fatalf("spends %+v, want the child's input", spends)
	}
	wantSet(t, "transactions affected", affected, grandchild.ID)
}

// TestConflictListsNameOnlyStoredTransactions: S spends L:0 and is
// stored; G spends L:1 and was never created (a validator stopped between
// Spend and Create). The lists a recursive marker walks down name S, not
// G: marking a list naming G is refused whole (TX_NOT_FOUND), and the
// marker used to stop there, S unmarked. Marking what they name succeeds.
func TestConflictListsNameOnlyStoredTransactions(t *testing.T) {
	db := newStore(t, Options{})
	p := spendTx("P", []wire.OutPoint{{Hash: chainhash.Hash{0xa1}}}, 1, 5e8)
	mustCreate(t, db, p, 1, mined(1))
	l := spendTx("L", []wire.OutPoint{out(p, 0)}, 2, 4e8)
	s := spendTx("S", []wire.OutPoint{out(l, 0)}, 1, 1e8)
	for _, tx := range []*chain.Tx{l, s} {
		mustCreate(t, db, tx, 11)
		mustSpend(t, db, tx)
	}
	g := spendTx("G", []wire.OutPoint{out(l, 1)}, 1, 1e8)
	mustSpend(t, db, g)
	children, err := db.GetConflictingChildren(ctx, l.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantSet(t, "conflicting children", children, s.ID)
	_, next, err := db.SetConflicting(ctx, []chainhash.Hash{l.ID}, true)
	if err != nil {
		t.Fatal(err)
	}
	wantSet(t, "the next generation to mark", next, s.ID)
	if _, _, err := db.SetConflicting(ctx, next, true); err != nil {
		t.Fatalf("marking the next generation: %v", err)
	}
	if !mustGet(t, db, s.ID).Conflicting {
		t.Errorf("S is not conflicting")
	}
}

// Behaviour 10b: the counter-conflicting set and the conflicting children
// include the spenders' descendants.
func TestCounterConflictingAndConflictingChildrenIncludeDescendants(t *testing.T) {
	testCounterConflictingAndConflictingChildrenIncludeDescendants(t, onMemory)
}

func testCounterConflictingAndConflictingChildrenIncludeDescendants(t *testing.T, open engineOpener) {
	db := newStoreOn(t, open, Options{})
	parent, child := parentAndSpender(t, db)
	grandchild := spendTx("grandchild", []wire.OutPoint{out(child, 0)}, 1, 1)
	for _, tx := range []*chain.Tx{child, grandchild} {
		mustCreate(t, db, tx, 11)
		mustSpend(t, db, tx)
	}
	rival := spendTx("rival", []wire.OutPoint{out(parent, 0)}, 1, 1)
	mustCreate(t, db, rival, 11)
	counter, err := db.GetCounterConflicting(ctx, rival.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantSet(t, "counter-conflicting", counter, rival.ID, child.ID, grandchild.ID)
	children, err := db.GetConflictingChildren(ctx, parent.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantSet(t, "conflicting children", children, child.ID, grandchild.ID)
}

// Behaviour 10c: GetSpend of a frozen output reports the frozen spending
// data: 32 × 0xFF as the transaction and the output's vout as the input.
func TestGetSpendOfAFrozenOutputReportsTheFrozenSpendingData(t *testing.T) {
	db := newStore(t, Options{})
	parent, _ := parentAndSpender(t, db)
	if err := db.FreezeUTXOs(ctx, []*Spend{{TxID: parent.ID, Vout: 1}}); err != nil {
		t.Fatal(err)
	}
	resp, err := db.GetSpend(ctx, &Spend{TxID: parent.ID, Vout: 1})
	if err != nil {
		t.Fatal(err)
	}
	var frozenTx chainhash.Hash
	for i := range frozenTx {
		frozenTx[i] = 0xff
	}
	if resp.Status != StatusFrozen || resp.SpendingData == nil || resp.SpendingData.TxID != frozenTx || resp.SpendingData.Vin != 1 {
		t.Fatalf("frozen output: %+v %+v", resp, resp.SpendingData)
	}
}

// Behaviour 10d: a reassigned output reports IMMATURE until the block that
// may spend it, with its hold in SpendableIn.
func TestGetSpendOfAHeldReassignedOutputIsNotUnspent(t *testing.T) {
	db := newStore(t, Options{})
	parent, _ := parentAndSpender(t, db)
	mustSetHeight(t, db, 101)
	target := &Spend{TxID: parent.ID, Vout: 1}
	if err := db.FreezeUTXOs(ctx, []*Spend{target}); err != nil {
		t.Fatal(err)
	}
	newHash := chainhash.Hash{0x42}
	if err := db.ReAssignUTXO(ctx, target, &Spend{UTXOHash: &newHash}); err != nil {
		t.Fatal(err)
	}
	status := func() *SpendResponse {
		t.Helper()
		resp, err := db.GetSpend(ctx, &Spend{TxID: parent.ID, Vout: 1, UTXOHash: &newHash})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := status(); resp.Status != StatusImmature || resp.SpendableIn != 1101 || resp.SpendingData != nil {
		t.Fatalf("held reassigned output: %+v", resp)
	}
	mustSetHeight(t, db, 1101)
	if resp := status(); resp.Status != StatusUnspent {
		t.Fatalf("reassigned output after its hold: %+v", resp)
	}
}

// Behaviour 10e: GetSpend's statuses take precedence in the reference's
// order: locked over conflicting over frozen over spent.
func TestGetSpendLockedAndConflictingTakePrecedence(t *testing.T) {
	testGetSpendLockedAndConflictingTakePrecedence(t, onMemory)
}

func testGetSpendLockedAndConflictingTakePrecedence(t *testing.T, open engineOpener) {
	db := newStoreOn(t, open, Options{})
	parent, child := parentAndSpender(t, db)
	mustSpend(t, db, child)
	if err := db.FreezeUTXOs(ctx, []*Spend{{TxID: parent.ID, Vout: 1}}); err != nil {
		t.Fatal(err)
	}
	check := func(vout uint32, want OutputStatus) {
		t.Helper()
		resp, err := db.GetSpend(ctx, &Spend{TxID: parent.ID, Vout: vout})
		if err != nil || resp.Status != want {
			t.Fatalf("output %d: %+v %v, want %s", vout, resp, err, want)
		}
	}
	if _, _, err := db.SetConflicting(ctx, []chainhash.Hash{parent.ID}, true); err != nil {
		t.Fatal(err)
	}
	check(0, StatusConflicting)
	check(1, StatusConflicting)
	if err := db.SetLocked(ctx, []chainhash.Hash{parent.ID}, true); err != nil {
		t.Fatal(err)
	}
	check(0, StatusLocked)
	check(1, StatusLocked)
}

// Behaviour 11 (set-mined's delete-at-height): set-mined schedules a fully
// spent transaction from the store height + 1, like every other operation,
// not from the height of the block it names.
func TestSetMinedSchedulesDeletionFromTheNextHeight(t *testing.T) {
	db := newStore(t, Options{BlockHeightRetention: 5})
	parent := spendTx("unmined parent", []wire.OutPoint{{Hash: chainhash.Hash{0xaa}}}, 1, 1e8)
	mustCreate(t, db, parent, 49) // unmined for less than the unmined retention at 50
	mustSpend(t, db, spendTx("spender", []wire.OutPoint{out(parent, 0)}, 1, 1), WithBlockHeight(50))
	mustSetHeight(t, db, 50)
	if _, err := db.SetMinedMulti(ctx, []chainhash.Hash{parent.ID}, model.MinedBlockInfo{BlockID: 11, BlockHeight: 10, OnLongestChain: true}); err != nil {
		t.Fatal(err)
	}
	if m := mustGet(t, db, parent.ID); m.DeleteAtHeight != 56 {
		t.Fatalf("DAH %d, want 51+5", m.DeleteAtHeight)
	}
}
