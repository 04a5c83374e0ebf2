package chain_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
)

// valuesTx is a one-input transaction paying values, in order.
func valuesTx(values ...int64) *chain.Tx {
	msg := wire.NewMsgTx(1)
	msg.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: 7}, SignatureScript: []byte{0x51}})
	for _, v := range values {
		msg.AddTxOut(wire.NewTxOut(v, []byte{0x51}))
	}
	return chain.NewTx(msg)
}

func TestCheckOutputValues(t *testing.T) {
	for _, c := range []struct {
		name   string
		values []int64
		output int    // the output refused; -1: none
		reason string // in the refusal
	}{
		{"zero and the whole supply", []int64{0, chain.MaxMoney}, -1, ""},
		{"no outputs", nil, -1, ""},
		{"negative", []int64{10, -5}, 1, "below 0"},
		{"the most negative", []int64{-1 << 63}, 0, "below 0"},
		{"over the supply", []int64{chain.MaxMoney + 1}, 0, "above the 2100000000000000 satoshis"},
		{"the largest value", []int64{1<<63 - 1}, 0, "above the"},
		{"a sum over the supply", []int64{chain.MaxMoney, 0, 1, 5}, 2, "sum to 2100000000000001"},
	} {
		tx := valuesTx(c.values...)
		err := chain.CheckOutputValues(tx)
		if c.output < 0 {
			if err != nil {
				t.Errorf("%s: want no refusal, got %v", c.name, err)
			}
			continue
		}
		var ve *chain.ValueError
		if !errors.As(err, &ve) {
			t.Fatalf("%s: want a *chain.ValueError, got %T %v", c.name, err, err)
		}
		if ve.Output != c.output || ve.TxID != tx.ID || ve.Value != c.values[c.output] || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%s: want output %d (%q) of %s, got %+v: %v", c.name, c.output, c.reason, tx.ID, ve, err)
		}
	}
}

// A block holding a transaction with a negative output is refused by the
// output value check, whose reason names the transaction and the output.
func TestCheckRefusesNegativeOutputInBlock(t *testing.T) {
	blk := mainnetBlocks(t)[damagedHeight]
	spender := blk.Txs[1].Msg.Copy()
	spender.TxOut[0].Value = -5
	bad := chain.NewTx(spender)
	damaged := *blk
	damaged.Txs = append([]*chain.Tx{blk.Txs[0], bad}, blk.Txs[2:]...)
	// Trusting the proof leaves the merkle root, which the new
	// transaction changes, unchecked: the value check has to refuse it.
	ce := checkErr(t, mainnetRules(t, true).Check(&damaged, damagedHeight))
	if ce.Check != chain.CheckOutputValue || !strings.Contains(ce.Reason, "output 0 of transaction "+bad.ID.String()) || !strings.Contains(ce.Reason, "below 0") {
		t.Errorf("want the output value check naming output 0 of %s, got %v", bad.ID, ce)
	}
}
