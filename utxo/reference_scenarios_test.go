package utxo

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/utxo/model"
)

// The scenarios every store of the reference implementation must pass
// (bsv-blockchain/teranode, stores/utxo/tests/tests.go: Store, Spend,
// Restore, Freeze, ReAssign, SetMined, Conflicting, Sanity), written anew
// against this store's API. They run on every engine: memory, pebble,
// sozu, and Redis when a cluster is configured.

// scenarioTxs is the fixture of the scenarios: a parent, a transaction
// spending its last output, and a spender of that transaction's output 0.
type scenarioTxs struct {
	parent, tx, spender *chain.Tx
	// out0 names output 0 of tx, with its UTXO hash.
	out0 *Spend
}

func newScenarioTxs() scenarioTxs {
	parent := spendTx("scenario parent", []wire.OutPoint{{Hash: chainhash.Hash{0x5e}, Index: 5}}, 4, 2e7)
	tx := spendTx("scenario tx", []wire.OutPoint{out(parent, 3)}, 6, 1e6)
	spender := spendTx("scenario spender", []wire.OutPoint{out(tx, 0)}, 2, 4e5)
	o := tx.Msg.TxOut[0]
	h := chainhash.Hash(chain.UTXOHash(tx.ID, 0, o.PkScript, uint64(o.Value)))
	return scenarioTxs{parent: parent, tx: tx, spender: spender, out0: &Spend{TxID: tx.ID, Vout: 0, UTXOHash: &h}}
}

// withHash returns a copy of sp carrying the claimed UTXO hash h.
func withHash(sp *Spend, h chainhash.Hash) *Spend {
	c := *sp
	c.UTXOHash = &h
	return &c
}

func scenarioStore(t *testing.T, db *DB, f scenarioTxs) {
	mustCreate(t, db, f.tx, 1000)
	if m := mustGet(t, db, f.tx.ID); m.Tx == nil || m.Tx.ID != f.tx.ID {
		t.Fatalf("stored transaction reads back as %+v", m.Tx)
	}
	_, err := db.Create(ctx, f.tx, 1000)
	wantCode(t, err, model.ErrTxExists)
	mustSpend(t, db, f.spender)
	_, err = db.Create(ctx, f.tx, 1000)
	wantCode(t, err, model.ErrTxExists)
}

func scenarioSpend(t *testing.T, db *DB, f scenarioTxs) {
	mustCreate(t, db, f.tx, 1000)
	mustSpend(t, db, f.spender)
	if m := mustGet(t, db, f.tx.ID); m.Tx == nil || m.Tx.ID != f.tx.ID {
		t.Fatalf("stored transaction reads back as %+v", m.Tx)
	}
	double := spendTx("scenario double spender", []wire.OutPoint{out(f.tx, 0)}, 1, 4e5)
	spends, err := db.Spend(ctx, double)
	wantCode(t, err, model.ErrSpent)
	if !errors.Is(spends[0].Err, model.ErrSpent) || spends[0].ConflictingTxID == nil || *spends[0].ConflictingTxID != f.spender.ID {
		t.Fatalf("the double spend: %v, conflicting with %v", spends[0].Err, spends[0].ConflictingTxID)
	}
}

// scenarioRestore: the reference's scenario unspends with spending data
// that is not the spender's and expects success; here that unspend
// succeeds without touching the spend (see record.UnspendOptions.Expected),
// and the spender's own unspend restores the output.
func scenarioRestore(t *testing.T, db *DB, f scenarioTxs) {
	mustCreate(t, db, f.tx, 1000)
	mustSpend(t, db, f.spender)
	someoneElse := *f.out0
	someoneElse.SpendingData = &model.SpendingData{TxID: chainhash.Hash{0xc7}, Vin: 0}
	if err := db.Unspend(ctx, []*Spend{&someoneElse}, false); err != nil {
		t.Fatalf("unspend naming another spender: %v", err)
	}
	if sd := mustGet(t, db, f.tx.ID).Outputs[0].SpendingData; sd == nil || sd.TxID != f.spender.ID {
		t.Fatalf("an unspend naming another spender released the output: %v", sd)
	}
	own := *f.out0
	own.SpendingData = &model.SpendingData{TxID: f.spender.ID, Vin: 0}
	if err := db.Unspend(ctx, []*Spend{&own}, false); err != nil {
		t.Fatal(err)
	}
	m := mustGet(t, db, f.tx.ID)
	if m.Tx == nil || m.Tx.ID != f.tx.ID || m.Outputs[0].SpendingData != nil {
		t.Fatalf("after the unspend: tx %v, output 0 spent by %v", m.Tx, m.Outputs[0].SpendingData)
	}
}

func scenarioFreeze(t *testing.T, db *DB, f scenarioTxs) {
	mustCreate(t, db, f.tx, 1000)
	if err := db.FreezeUTXOs(ctx, []*Spend{f.out0}); err != nil {
		t.Fatal(err)
	}
	spends, err := db.Spend(ctx, f.spender)
	wantCode(t, err, model.ErrFrozen)
	if !errors.Is(spends[0].Err, model.ErrFrozen) {
		t.Fatalf("spend of a frozen output: %v", spends[0].Err)
	}
	resp, err := db.GetSpend(ctx, f.out0)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != StatusFrozen || resp.SpendingData == nil || resp.SpendingData.TxID != frozenTxID || resp.SpendingData.Vin != 0 {
		t.Fatalf("frozen output: %+v %+v", resp, resp.SpendingData)
	}
	if err := db.UnFreezeUTXOs(ctx, []*Spend{f.out0}); err != nil {
		t.Fatal(err)
	}
	if resp, err := db.GetSpend(ctx, f.out0); err != nil || resp.Status != StatusUnspent {
		t.Fatalf("unfrozen output: %+v %v", resp, err)
	}
	mustSpend(t, db, f.spender)
	resp, err = db.GetSpend(ctx, f.out0)
	if err != nil || resp.Status != StatusSpent || resp.SpendingData == nil || resp.SpendingData.TxID != f.spender.ID {
		t.Fatalf("spent output: %+v %v", resp, err)
	}
}

func scenarioReAssign(t *testing.T, db *DB, f scenarioTxs) {
	mustSetHeight(t, db, 101)
	// Mined, as the alert system's outputs are: an unmined transaction
	// would be cleaned up long before the reassignment's 1,000 blocks.
	mustCreate(t, db, f.tx, 100, mined(100))
	newOutput := &wire.TxOut{Value: f.tx.Msg.TxOut[0].Value, PkScript: script("scenario new owner")}
	newHash := chainhash.Hash(chain.UTXOHash(f.tx.ID, 0, newOutput.PkScript, uint64(newOutput.Value)))
	newOwner := spendTx("scenario new owner's spend", []wire.OutPoint{out(f.tx, 0)}, 1, 4e5)
	reassigned := withHash(f.out0, newHash)

	wantCode(t, db.ReAssignUTXO(ctx, f.out0, reassigned), model.ErrUtxoNotFrozen)
	if err := db.FreezeUTXOs(ctx, []*Spend{f.out0}); err != nil {
		t.Fatal(err)
	}
	if err := db.ReAssignUTXO(ctx, f.out0, reassigned); err != nil {
		t.Fatal(err)
	}
	_, err := db.GetSpend(ctx, f.out0)
	wantCode(t, err, model.ErrUtxoHashMismatch)
	resp, err := db.GetSpend(ctx, reassigned)
	if err != nil || resp.Status != StatusImmature || resp.SpendingData != nil {
		t.Fatalf("held reassigned output: %+v %v", resp, err)
	}
	// The old owner's claim no longer matches; the new owner is held.
	_, err = db.Spend(ctx, f.spender, WithPreviousOutputs([]*wire.TxOut{f.tx.Msg.TxOut[0]}))
	wantCode(t, err, model.ErrUtxoHashMismatch)
	newClaim := WithPreviousOutputs([]*wire.TxOut{newOutput})
	_, err = db.Spend(ctx, newOwner, newClaim)
	wantCode(t, err, model.ErrFrozenUntil)
	mustSetHeight(t, db, 1101)
	mustSpend(t, db, newOwner, newClaim)
}

func scenarioSetMined(t *testing.T, db *DB, f scenarioTxs) {
	mustSetHeight(t, db, 101)
	mustCreate(t, db, f.tx, 0)
	check := func(info model.MinedBlockInfo, ids, heights []uint32, subtrees []int) {
		t.Helper()
		got, err := db.SetMinedMulti(ctx, []chainhash.Hash{f.tx.ID}, info)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || !slices.Equal(got[f.tx.ID], ids) {
			t.Fatalf("block IDs returned %v, want %v", got, ids)
		}
		m := mustGet(t, db, f.tx.ID)
		if !slices.Equal(m.BlockIDs, ids) || !slices.Equal(m.BlockHeights, heights) || !slices.Equal(m.SubtreeIdxs, subtrees) {
			t.Fatalf("stored blocks %v heights %v subtrees %v, want %v %v %v", m.BlockIDs, m.BlockHeights, m.SubtreeIdxs, ids, heights, subtrees)
		}
	}
	check(model.MinedBlockInfo{BlockID: 123, BlockHeight: 101, SubtreeIdx: 2}, []uint32{123}, []uint32{101}, []int{2})
	check(model.MinedBlockInfo{BlockID: 124, BlockHeight: 102, SubtreeIdx: 1}, []uint32{123, 124}, []uint32{101, 102}, []int{2, 1})
	check(model.MinedBlockInfo{BlockID: 123, BlockHeight: 101, SubtreeIdx: 2, UnsetMined: true}, []uint32{124}, []uint32{102}, []int{1})
}

func scenarioConflicting(t *testing.T, db *DB, f scenarioTxs) {
	mustCreate(t, db, f.parent, 999)
	mustCreate(t, db, f.tx, 1000, WithConflicting())
	spends, err := db.Spend(ctx, f.spender)
	wantCode(t, err, model.ErrConflicting)
	if !errors.Is(spends[0].Err, model.ErrConflicting) {
		t.Fatalf("spend of a conflicting transaction's output: %v", spends[0].Err)
	}
	if m := mustGet(t, db, f.tx.ID); !m.Conflicting || len(m.ConflictingChildren) != 0 {
		t.Fatalf("the conflicting tx: conflicting %v, children %v", m.Conflicting, m.ConflictingChildren)
	}
	if m := mustGet(t, db, f.parent.ID); m.Conflicting || !slices.Equal(m.ConflictingChildren, []chainhash.Hash{f.tx.ID}) {
		t.Fatalf("its parent: conflicting %v, children %v", m.Conflicting, m.ConflictingChildren)
	}
}

func scenarioSanity(t *testing.T, db *DB, f scenarioTxs) {
	const n = 1000
	spenders := make([]*chain.Tx, n)
	outputs := make([]*Spend, n)
	for i := range n {
		stx := spendTx(fmt.Sprint("sanity ", i), []wire.OutPoint{out(f.tx, 0)}, 1, int64(i)+2_000_000)
		mustCreate(t, db, stx, 100)
		spender := spendTx(fmt.Sprint("sanity spender ", i), []wire.OutPoint{out(stx, 0)}, 1, int64(i))
		mustSpend(t, db, spender)
		o := stx.Msg.TxOut[0]
		h := chainhash.Hash(chain.UTXOHash(stx.ID, 0, o.PkScript, uint64(o.Value)))
		spenders[i], outputs[i] = spender, &Spend{TxID: stx.ID, Vout: 0, UTXOHash: &h}
	}
	for i := range n {
		resp, err := db.GetSpend(ctx, outputs[i])
		if err != nil || resp.Status != StatusSpent || resp.SpendingData == nil || resp.SpendingData.TxID != spenders[i].ID {
			t.Fatalf("output of transaction %d: %+v %v", i, resp, err)
		}
	}
}

func TestReferenceScenarios(t *testing.T) {
	scenarios := []struct {
		name string
		fn   func(*testing.T, *DB, scenarioTxs)
	}{
		{"Store", scenarioStore},
		{"Spend", scenarioSpend},
		{"Restore", scenarioRestore},
		{"Freeze", scenarioFreeze},
		{"ReAssign", scenarioReAssign},
		{"SetMined", scenarioSetMined},
		{"Conflicting", scenarioConflicting},
		{"Sanity", scenarioSanity},
	}
	engines := persistentEngines(t)
	engines["memory"] = func(testing.TB) engine.Engine { return memory.New() }
	for name, open := range engines {
		t.Run(name, func(t *testing.T) {
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) {
					sc.fn(t, newStoreOn(t, open, Options{}), newScenarioTxs())
				})
			}
		})
	}
}
