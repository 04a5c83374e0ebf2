package utxo

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/model"
	"github.com/utxostore/utxostore/utxo/record"
)

// TestVerifyNamesChainSpendsWhoseTransactionIsUnlisted: block 1 mines Q,
// block 2 mines C, which spends Q:0, and block 3 spends C's output, so C is
// pruned a few blocks on and Q lists it among its deleted children; verify
// passes. With that entry lost, as the prune's crash window before d064601
// lost it, Q:0 reads as spent by a transaction never created, which a
// block may take: a double spend that the set's statistics, counting Q:0
// spent, do not show. Verify names Q:0 and C, and takes it neither for
// damage to the statistics nor for a Spend never created.
func TestVerifyNamesChainSpendsWhoseTransactionIsUnlisted(t *testing.T) {
	db := newStore(t, Options{BlockHeightRetention: MinBlockHeightRetention})
	p, genesis := minedParentAtGenesis(t, db, 1)
	q := spendTx("Q", []wire.OutPoint{out(p, 0)}, 2, 2e8)
	c := spendTx("C", []wire.OutPoint{out(q, 0)}, 1, 1e8)
	d := spendTx("D", []wire.OutPoint{out(c, 0)}, 1, 5e7)
	prev := genesis
	for _, txs := range [][]*chain.Tx{{q}, {c}, {d}} {
		prev = blockAfter(prev, txs...)
		connectAll(t, db, []Block{prev})
	}
	for prev.Height < 12 {
		if _, err := db.Get(ctx, c.ID); errors.Is(err, model.ErrTxNotFound) {
			break
		}
		prev = blockAfter(prev)
		connectAll(t, db, []Block{prev})
	}
	if _, err := db.Get(ctx, c.ID); !errors.Is(err, model.ErrTxNotFound) {
		t.Fatalf("C at height %d: %v, want it pruned", prev.Height, err)
	}
	mustVerify(t, db)

	key := engine.Key(record.MasterKey(q.ID))
	_, err := db.eng.Update(ctx, []engine.Update{{Key: key, Fn: func(current []byte) (engine.Mutation, error) {
		r, err := record.Decode(current)
		if err != nil {
			return engine.Mutation{}, err
		}
		if !slices.Contains(r.DeletedChildren, c.ID) {
			t.Errorf("Q lists %v among its deleted children, want C", r.DeletedChildren)
		}
		r.DeletedChildren = nil
		return engine.Mutation{Action: engine.Put, Value: r.Encode(), Terms: r.Terms()}, nil
	}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Verify(ctx)
	var unlisted *UnlistedChainSpendsError
	want := []DanglingSpend{{Output: out(q, 0), Spender: model.SpendingData{TxID: c.ID, Vin: 0}}}
	if !errors.As(err, &unlisted) || !reflect.DeepEqual(unlisted.Spends, want) {
		t.Fatalf("verify: %v, want %+v named as unlisted spends of the chain", err, want)
	}
}
