package utxo

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/pebble"
	"github.com/utxostore/utxostore/engine/sozu"
	"github.com/utxostore/utxostore/utxo/model"
)

// spendModel is what a sequence of creates, spends and unspends must
// leave: the transactions created, with their output counts, and the
// spender of every spent output.
type spendModel struct {
	outputs map[chainhash.Hash]int
	spender map[wire.OutPoint]model.SpendingData
}

// spend is what Spend of tx must answer, input by input (nil where the
// input is spent), and applies it when every input is.
func (m *spendModel) spend(tx *chain.Tx) (refusals []error, whole error) {
	seen := map[wire.OutPoint]bool{}
	for _, in := range tx.Msg.TxIn {
		if seen[in.PreviousOutPoint] {
			return nil, model.ErrInvalidSpend
		}
		seen[in.PreviousOutPoint] = true
	}
	refusals = make([]error, len(tx.Msg.TxIn))
	for vin, in := range tx.Msg.TxIn {
		op := in.PreviousOutPoint
		n, created := m.outputs[op.Hash]
		s, spent := m.spender[op]
		switch {
		case !created:
			refusals[vin] = model.ErrTxNotFound
		case int(op.Index) >= n:
			refusals[vin] = model.ErrUtxoNotFound
		case spent && s != (model.SpendingData{TxID: tx.ID, Vin: uint32(vin)}):
			refusals[vin] = model.ErrSpent
		}
		if whole == nil {
			whole = refusals[vin]
		}
	}
	if whole == nil {
		for vin, in := range tx.Msg.TxIn {
			m.spender[in.PreviousOutPoint] = model.SpendingData{TxID: tx.ID, Vin: uint32(vin)}
		}
	}
	return refusals, whole
}

// unspend frees the outputs tx spends, where tx is their spender.
func (m *spendModel) unspend(tx *chain.Tx) {
	for vin, in := range tx.Msg.TxIn {
		if m.spender[in.PreviousOutPoint] == (model.SpendingData{TxID: tx.ID, Vin: uint32(vin)}) {
			delete(m.spender, in.PreviousOutPoint)
		}
	}
}

// FuzzSpendsAgreeWithTheirModel: any sequence of creates, spends and
// unspends of a few transactions that spend each other's outputs (and
// outputs that do not exist) leaves every output spent by the spender
// the model says, or unspent, on the memory engine, Sozu and Pebble, with
// transactions of up to three outputs over records of two (so that most
// span records and the blob store). Every spend is all or nothing, and an
// output spent by one transaction is refused to every other with SPENT
// naming the first: no double spend, and no spend lost.
//
// Each three bytes of the input are one step: a new transaction (its
// inputs picked among the outputs of those before it, one past the last
// included), or Create, Spend or Unspend of one of them.
func FuzzSpendsAgreeWithTheirModel(f *testing.F) {
	// Two spenders of root:0: the second is refused until the first is
	// unspent, then the first is.
	f.Add([]byte{0, 0, 0, 1, 0, 0, 1, 1, 0, 2, 1, 0, 0, 0, 0, 1, 2, 0, 2, 2, 0, 3, 1, 0, 2, 2, 0, 2, 1, 0})
	// Spends across records: tx1 spends root:2 (record 1) into three
	// outputs, tx2 spends tx1:2, and tx3 spends tx2:0 and tx1:2, refused
	// whole (tx2:0 stays unspent) until tx2 is unspent.
	f.Add([]byte{0, 0, 2, 1, 0, 0, 1, 1, 0, 2, 1, 0, 0, 0, 5, 1, 2, 0, 2, 2, 0, 0, 3, 2, 1, 3, 0, 2, 3, 0, 3, 2, 0, 2, 3, 0})
	// One store per engine for every input: each input's transactions
	// are its own (their tags carry the input's number), so that inputs
	// do not meet, and the stores grow as a long-lived one does.
	stores := map[string]*DB{
		"memory": newStoreOn(f, onMemory, Options{UtxoBatchSize: 2}),
		"sozu": newStoreOn(f, func(t testing.TB) engine.Engine {
			e, err := sozu.Open(filepath.Join(t.TempDir(), "sozu"), sozu.Options{Sync: engine.SyncBlock})
			if err != nil {
				t.Fatal(err)
			}
			return e
		}, Options{UtxoBatchSize: 2}),
		"pebble": newStoreOn(f, func(t testing.TB) engine.Engine {
			e, err := pebble.Open(filepath.Join(t.TempDir(), "pebble"), pebble.Options{Sync: engine.SyncBlock})
			if err != nil {
				t.Fatal(err)
			}
			return e
		}, Options{UtxoBatchSize: 2}),
	}
	var inputs atomic.Int64
	f.Fuzz(func(t *testing.T, steps []byte) {
		if len(steps) > 3*48 {
			steps = steps[:3*48]
		}
		input := inputs.Add(1)
		for name, db := range stores {
			checkSpendSteps(t, name, db, fmt.Sprintf("input %d", input), steps)
		}
	})
}

// checkSpendSteps runs steps on db, its transactions' tags starting with
// tag.
func checkSpendSteps(t *testing.T, engineName string, db *DB, tag string, steps []byte) {
	m := &spendModel{outputs: map[chainhash.Hash]int{}, spender: map[wire.OutPoint]model.SpendingData{}}
	// The first transaction spends an output of none: its input is of a
	// transaction never created.
	txs := []*chain.Tx{spendTx(tag+" root", []wire.OutPoint{{Hash: chainhash.Hash{1}}}, 3, 1000)}
	for i := 0; i+2 < len(steps); i += 3 {
		kind, a, b := steps[i]%4, int(steps[i+1]), int(steps[i+2])
		tx := txs[a%len(txs)]
		var step string
		switch kind {
		case 0:
			txs = append(txs, fuzzSpender(txs, a, b, fmt.Sprintf("%s tx%d", tag, len(txs))))
			continue
		case 1:
			step = "create"
			_, err := db.Create(ctx, tx, 0)
			_, created := m.outputs[tx.ID]
			if created != errors.Is(err, model.ErrTxExists) || !created && err != nil {
				t.Fatalf("%s: step %d: create %s (created before: %v): %v", engineName, i/3, tx.ID, created, err)
			}
			m.outputs[tx.ID] = len(tx.Msg.TxOut)
		case 2:
			step = "spend"
			wantRefusals, wantWhole := m.spend(tx)
			spends, err := db.Spend(ctx, tx)
			if (err == nil) != (wantWhole == nil) || wantWhole != nil && !errors.Is(err, wantWhole) {
				t.Fatalf("%s: step %d: spend %s: %v, want %v", engineName, i/3, tx.ID, err, wantWhole)
			}
			for vin, want := range wantRefusals {
				got := spends[vin].Err
				if (got == nil) != (want == nil) || want != nil && !errors.Is(got, want) {
					t.Fatalf("%s: step %d: spend %s input %d: %v, want %v", engineName, i/3, tx.ID, vin, got, want)
				}
				if errors.Is(want, model.ErrSpent) {
					if first := m.spender[tx.Msg.TxIn[vin].PreviousOutPoint]; spends[vin].ConflictingTxID == nil || *spends[vin].ConflictingTxID != first.TxID {
						t.Fatalf("%s: step %d: spend %s input %d refused as SPENT naming %v, want %s", engineName, i/3, tx.ID, vin, spends[vin].ConflictingTxID, first.TxID)
					}
				}
			}
		case 3:
			step = "unspend"
			spends, err := spendsOf(tx, nil)
			if err != nil {
				t.Fatal(err)
			}
			_ = db.Unspend(ctx, spends, false) // what it frees is checked below
			m.unspend(tx)
		}
		// The outputs the step could change; every output at the end.
		touched := []wire.OutPoint{{Hash: tx.ID}, {Hash: tx.ID, Index: 1}, {Hash: tx.ID, Index: 2}}
		for _, in := range tx.Msg.TxIn {
			touched = append(touched, in.PreviousOutPoint)
		}
		checkSpenders(t, fmt.Sprintf("%s: step %d (%s %s)", engineName, i/3, step, tx.ID), db, m, touched)
	}
	var all []wire.OutPoint
	for _, tx := range txs {
		for vout := range uint32(len(tx.Msg.TxOut)) {
			all = append(all, wire.OutPoint{Hash: tx.ID, Index: vout})
		}
	}
	checkSpenders(t, engineName+": the last step", db, m, all)
}

// fuzzSpender is a fuzz target's new transaction, tagged tag, of 1+b%3
// outputs: its inputs are among the outputs of txs, those before it, one
// of them past the last output; a second input when a is odd.
func fuzzSpender(txs []*chain.Tx, a, b int, tag string) *chain.Tx {
	from := []wire.OutPoint{{Hash: txs[b%len(txs)].ID, Index: uint32(b/len(txs)) % 4}}
	if a%2 == 1 {
		from = append(from, wire.OutPoint{Hash: txs[a/2%len(txs)].ID, Index: uint32(b % 3)})
	}
	return spendTx(tag, from, 1+b%3, 1000)
}

// checkSpenders compares outputs with the model: those of a created
// transaction are unspent or spent by the model's spender, and those of
// one never created are not found.
func checkSpenders(t *testing.T, after string, db *DB, m *spendModel, outputs []wire.OutPoint) {
	t.Helper()
	for _, op := range outputs {
		n, created := m.outputs[op.Hash]
		resp, err := db.GetSpend(ctx, &Spend{TxID: op.Hash, Vout: op.Index})
		switch {
		case !created:
			if !errors.Is(err, model.ErrTxNotFound) {
				t.Fatalf("after %s: %s, of a transaction never created: %v", after, op, err)
			}
			continue
		case int(op.Index) >= n:
			if !errors.Is(err, model.ErrUtxoNotFound) {
				t.Fatalf("after %s: %s, past its transaction's %d outputs: %v", after, op, n, err)
			}
			continue
		case err != nil:
			t.Fatalf("after %s: %s: %v", after, op, err)
		}
		want, spent := m.spender[op]
		switch {
		case spent && (resp.SpendingData == nil || *resp.SpendingData != want):
			t.Fatalf("after %s: %s is spent by %+v, the store says %+v", after, op, want, resp.SpendingData)
		case !spent && resp.SpendingData != nil:
			t.Fatalf("after %s: %s is unspent, the store says spent by %+v", after, op, *resp.SpendingData)
		}
	}
}
