package utxo

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/utxo/model"
)

// A transaction with an output value no chain accepts is refused by Create
// and by Spend, as INVALID_PARAMETER naming the output, and changes nothing.
func TestOutputValuesOutOfRangeAreRefused(t *testing.T) {
	db := newStore(t, Options{})
	parent := coinbaseTx("values", 2, 50)
	mustCreate(t, db, parent, 1, mined(1))
	for _, c := range []struct {
		name   string
		values []int64
		output uint32
	}{
		{"negative", []int64{10, -5}, 1},
		{"over the supply", []int64{21_000_000*100_000_000 + 1}, 0},
		{"a sum over the supply", []int64{21_000_000 * 100_000_000, 1}, 1},
	} {
		msg := wire.NewMsgTx(1)
		msg.AddTxIn(&wire.TxIn{PreviousOutPoint: out(parent, 0)})
		for i, v := range c.values {
			msg.AddTxOut(&wire.TxOut{Value: v, PkScript: script(c.name + string(rune('a'+i)))})
		}
		tx := chain.NewTx(msg)
		_, err := db.Create(ctx, tx, 2)
		wantCode(t, err, model.ErrInvalidParameter)
		var e *model.Error
		if errors.As(err, &e); e.TxID != tx.ID || e.Vout != c.output {
			t.Errorf("%s: create refusal names %s:%d, want %s:%d (%v)", c.name, e.TxID, e.Vout, tx.ID, c.output, err)
		}
		if _, err := db.Get(ctx, tx.ID); !errors.Is(err, model.ErrTxNotFound) {
			t.Errorf("%s: the refused create stored the transaction (%v)", c.name, err)
		}
		_, err = db.Spend(ctx, tx)
		wantCode(t, err, model.ErrInvalidParameter)
		if !strings.Contains(err.Error(), "output "+string(rune('0'+c.output))) {
			t.Errorf("%s: spend refusal does not name output %d: %v", c.name, c.output, err)
		}
	}
	if m := mustGet(t, db, parent.ID); m.Outputs[0].SpendingData != nil {
		t.Errorf("a refused spend spent %s:0", parent.ID)
	}
}

// Spending an output beyond a transaction's last is UTXO_NOT_FOUND whatever
// the record it would be in: outputs 999 and 4294967295, whose records (100
// outputs each) do not exist, answer as output 3, beyond the outputs of
// the only record.
func TestSpendOfAnOutputBeyondTheLastIsUtxoNotFound(t *testing.T) {
	db := newStore(t, Options{UtxoBatchSize: 100})
	parent := spendTx("beyond", []wire.OutPoint{out(coinbaseTx("beyond", 1, 50), 0)}, 3, 10)
	mustCreate(t, db, parent, 1, mined(1))
	for _, vout := range []uint32{3, 999, math.MaxUint32} {
		_, err := db.Spend(ctx, spendTx("beyond", []wire.OutPoint{out(parent, vout)}, 1, 10))
		wantCode(t, err, model.ErrUtxoNotFound)
		var e *model.Error
		if errors.As(err, &e); e.TxID != parent.ID || e.Vout != vout {
			t.Errorf("vout %d: the refusal names %s:%d", vout, e.TxID, e.Vout)
		}
	}
	// A transaction that is not stored stays TX_NOT_FOUND.
	_, err := db.Spend(ctx, spendTx("nowhere", []wire.OutPoint{{Hash: coinbaseTx("nowhere", 1, 1).ID, Index: math.MaxUint32}}, 1, 10))
	wantCode(t, err, model.ErrTxNotFound)
}

// A transaction that must go to the blob store is refused as
// INVALID_PARAMETER, naming why, when the store has none; nothing is
// written, not even the lock record.
func TestCreateNeedingTheBlobStoreWithoutOneIsRefused(t *testing.T) {
	eng := memory.New()
	db, err := Open(ctx, eng, Options{UtxoBatchSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx := coinbaseTx("big", 101, 1)
	before := db.Changes()
	_, err = db.Create(ctx, tx, 1)
	wantCode(t, err, model.ErrInvalidParameter)
	if !strings.Contains(err.Error(), "blob store") || !strings.Contains(err.Error(), "101 outputs") {
		t.Errorf("the refusal does not say why: %v", err)
	}
	if changed := db.Changes() - before; changed != 0 {
		t.Errorf("the refused create made %d writes", changed)
	}
	// A transaction that fits one record needs no blob store.
	mustCreate(t, db, coinbaseTx("small", 100, 1), 1)
}

// A call that marks several transactions and names one the store does not
// hold is refused with TX_NOT_FOUND naming it, and marks none of the
// others: locked, conflicting, mined, off the longest chain. They used to
// be marked all the same, behind the refusal. Unsetting a block, which has
// nothing to undo on a missing transaction, skips it, as the reference does.
func TestMarkingCallsNamingAMissingTransactionChangeNothing(t *testing.T) {
	block := model.MinedBlockInfo{BlockID: 7, BlockHeight: 1, OnLongestChain: true}
	for name, call := range map[string]func(db *DB, txids []chainhash.Hash) error{
		"SetLocked": func(db *DB, txids []chainhash.Hash) error { return db.SetLocked(ctx, txids, true) },
		"SetConflicting": func(db *DB, txids []chainhash.Hash) error {
			_, _, err := db.SetConflicting(ctx, txids, true)
			return err
		},
		"SetMinedMulti": func(db *DB, txids []chainhash.Hash) error {
			_, err := db.SetMinedMulti(ctx, txids, block)
			return err
		},
		"MarkTransactionsOnLongestChain": func(db *DB, txids []chainhash.Hash) error {
			return db.MarkTransactionsOnLongestChain(ctx, txids, true)
		},
	} {
		t.Run(name, func(t *testing.T) {
			db := newStore(t, Options{})
			parent := coinbaseTx("parent", 1, 50e8)
			mustCreate(t, db, parent, 1, mined(1))
			u := spendTx("U", []wire.OutPoint{out(parent, 0)}, 1, 4e8)
			mustCreate(t, db, u, 1)
			missing := chainhash.Hash{0xee}
			before := mustGet(t, db, u.ID)
			err := call(db, []chainhash.Hash{u.ID, missing})
			wantCode(t, err, model.ErrTxNotFound)
			if !strings.Contains(err.Error(), missing.String()) {
				t.Errorf("the refusal does not name the missing transaction: %v", err)
			}
			if after := mustGet(t, db, u.ID); !reflect.DeepEqual(after, before) {
				t.Fatalf("the refused call changed U:\n%+v\nwant\n%+v", after, before)
			}
		})
	}
	db := newStore(t, Options{})
	unset := block
	unset.UnsetMined = true
	if _, err := db.SetMinedMulti(ctx, []chainhash.Hash{{0xee}}, unset); err != nil {
		t.Fatalf("unsetting a block on a missing transaction: %v", err)
	}
}
