package utxo

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
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
	connectUntilPruned(t, db, prev, c.ID, 12)
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

// TestVerifyFindsIndexTermsTheRecordsDoNotCarry: the engine's indexes are
// written with each record, from the terms the record layer gives. A
// record written with terms it does not carry, or without those it
// carries, leaves an index that a scan answers wrongly (a prune that
// misses a record, or deletes one too early); verify names it.
func TestVerifyFindsIndexTermsTheRecordsDoNotCarry(t *testing.T) {
	rewrite := func(t *testing.T, db *DB, txid chainhash.Hash, terms func(engine.Terms) engine.Terms) {
		t.Helper()
		_, err := db.eng.Update(ctx, []engine.Update{{Key: engine.Key(record.MasterKey(txid)), Fn: func(current []byte) (engine.Mutation, error) {
			r, err := record.Decode(current)
			if err != nil {
				return engine.Mutation{}, err
			}
			return engine.Mutation{Action: engine.Put, Value: current, Terms: terms(r.Terms())}, nil
		}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	for name, c := range map[string]struct {
		unmined bool // U's record is rewritten, else P's, which carries no term
		terms   func(engine.Terms) engine.Terms
		want    string
	}{
		"a term beside the record's": {
			unmined: true,
			terms:   func(t engine.Terms) engine.Terms { t.DeleteAtHeight = 7; return t },
			want:    "at 7, but no record carries that term",
		},
		"a term for a record that carries none": {
			terms: func(engine.Terms) engine.Terms { return engine.Terms{DeleteAtHeight: 7} },
			want:  "at 7, but no record carries that term",
		},
		"no term for a record that carries one": {
			unmined: true,
			terms:   func(engine.Terms) engine.Terms { return engine.Terms{} },
			want:    "index unminedSince has 0 for record",
		},
	} {
		t.Run(name, func(t *testing.T) {
			db := newStore(t, Options{})
			p, _ := minedParentAtGenesis(t, db, 1)
			u := spendTx("U", []wire.OutPoint{out(p, 0)}, 1, 4e8)
			mustCreate(t, db, u, 1)
			mustVerify(t, db)
			txid := p.ID
			if c.unmined {
				txid = u.ID
			}
			rewrite(t, db, txid, c.terms)
			if _, err := db.Verify(ctx); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("verify: %v, want %q", err, c.want)
			}
		})
	}
}
