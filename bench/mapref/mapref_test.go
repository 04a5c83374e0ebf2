package mapref_test

import (
	"context"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/bench/driver"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

func p2pkh(b byte) []byte {
	s := make([]byte, 25)
	s[0], s[1], s[2], s[3], s[23], s[24] = 0x76, 0xa9, 0x14, b, 0x88, 0xac
	return s
}

func tx(ins []wire.OutPoint, values ...int64) *chain.Tx {
	msg := wire.NewMsgTx(2)
	for _, in := range ins {
		msg.AddTxIn(&wire.TxIn{PreviousOutPoint: in, SignatureScript: []byte{1, 2}, Sequence: wire.MaxTxInSequenceNum})
	}
	for i, v := range values {
		msg.AddTxOut(&wire.TxOut{Value: v, PkScript: p2pkh(byte(i))})
	}
	return chain.NewTx(msg)
}

// TestOutcomesMatchTheStore makes the same calls on the map reference and
// on the store over the memory engine: every spend's outcome (success,
// idempotent re-spend, SPENT with nothing else spent, a data output that
// is no UTXO, an unknown transaction) and the final digest must agree.
func TestOutcomesMatchTheStore(t *testing.T) {
	ctx := context.Background()
	db, err := utxo.Open(ctx, memory.New(), utxo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	targets := map[string]driver.Target{"map": driver.NewMap(), "store": driver.Store{DB: db}}

	fund := tx([]wire.OutPoint{{Hash: chainhash.Hash{9}, Index: 0}}, 1000, 2000, 0, 0)
	fund.Msg.TxOut[2].PkScript = []byte{0x6a, 1, 7} // OP_RETURN: never a UTXO
	fund = chain.NewTx(fund.Msg)
	out := func(vout uint32) wire.OutPoint { return wire.OutPoint{Hash: fund.ID, Index: vout} }
	a := tx([]wire.OutPoint{out(0)}, 900)
	steps := []struct {
		name string
		tx   *chain.Tx
		want []error
	}{
		{"spend", a, []error{nil}},
		{"same spender again", a, []error{nil}},
		{"double spend next to an unspent output", tx([]wire.OutPoint{out(0), out(1)}, 2500), []error{model.ErrSpent, nil}},
		{"data output", tx([]wire.OutPoint{out(2)}, 1), []error{model.ErrUtxoNotFound}},
		{"unknown transaction", tx([]wire.OutPoint{{Hash: chainhash.Hash{1}, Index: 0}}, 1), []error{model.ErrTxNotFound}},
		{"zero-value output", tx([]wire.OutPoint{out(3)}, 0), []error{nil}},
	}
	digests := map[string]string{}
	for name, target := range targets {
		if err := target.Create(ctx, fund, 1); err != nil {
			t.Fatalf("%s: creating the funding tx: %v", name, err)
		}
		for _, step := range steps {
			errs, _ := target.Spend(ctx, step.tx, nil, 0)
			if len(errs) != len(step.want) {
				t.Fatalf("%s, %s: %d outcomes, want %d", name, step.name, len(errs), len(step.want))
			}
			for i, want := range step.want {
				if (want == nil) != (errs[i] == nil) || want != nil && !errors.Is(errs[i], want) {
					t.Errorf("%s, %s: input %d: %v, want %v", name, step.name, i, errs[i], want)
				}
			}
		}
		unspent, err := target.Unspent(ctx, []wire.OutPoint{out(0), out(1), out(3)})
		if err != nil {
			t.Fatal(err)
		}
		if unspent[0] || !unspent[1] || unspent[2] {
			t.Errorf("%s: unspent %v, want [false true false]: a refused spend spent nothing", name, unspent)
		}
		sum, err := target.Summary(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Utxos != 1 || sum.Satoshis != 2000 {
			t.Errorf("%s: summary %+v, want the one 2000-satoshi output", name, sum)
		}
		digests[name] = sum.Digest
	}
	if digests["map"] != digests["store"] {
		t.Fatalf("map digest %s, store %s", digests["map"], digests["store"])
	}
}
