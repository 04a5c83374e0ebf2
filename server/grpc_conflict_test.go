package server_test

import (
	"context"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/server"
	"github.com/utxostore/utxostore/utxo"
)

// TestConnectBlockMinesAConflictingTransactionWithItsChild: a validator
// stores A, which spends a coinbase's output, and then T, which spends it
// too and lost the race, and T's child C, both as conflicting; the
// network's next block mines T, C and C's child G. The daemon's
// ConnectBlock takes the block: T, C and G win, A loses. It used to
// refuse the block (C's input: CONFLICTING) every time it was sent,
// leaving the daemon behind the network for good.
func TestConnectBlockMinesAConflictingTransactionWithItsChild(t *testing.T) {
	ctx := context.Background()
	path := indexedPathOf(t, true)
	script := []byte{0x51}
	var prev chainhash.Hash
	var coinbase wire.OutPoint
	for height := uint32(0); height <= 100; height++ {
		b := ownBlockOf(t, prev, height, script)
		if err := path.Connect(ctx, b, height); err != nil {
			t.Fatalf("block %d: %v", height, err)
		}
		if height == 1 {
			coinbase = wire.OutPoint{Hash: b.Txs[0].ID}
		}
		prev = b.Hash
	}
	_, c := servePathForTest(t, path, server.Options{Network: "mainnet"})
	spend := func(from wire.OutPoint, value int64) *chain.Tx {
		msg := wire.NewMsgTx(1)
		msg.AddTxIn(wire.NewTxIn(&from, nil, nil))
		msg.AddTxOut(wire.NewTxOut(value, script))
		return chain.NewTx(msg)
	}
	a := spend(coinbase, 49e8)
	if _, err := c.Create(ctx, a, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Spend(ctx, a); err != nil {
		t.Fatal(err)
	}
	tx := spend(coinbase, 48e8)
	child := spend(wire.OutPoint{Hash: tx.ID}, 47e8)
	for _, lost := range []*chain.Tx{tx, child} {
		if _, err := c.Create(ctx, lost, 100, utxo.WithConflicting()); err != nil {
			t.Fatal(err)
		}
	}
	grandchild := spend(wire.OutPoint{Hash: child.ID}, 46e8)
	b := ownBlockOf(t, prev, 101, script, tx.Msg, child.Msg, grandchild.Msg)
	if _, _, err := c.ConnectBlock(ctx, b.Raw, 101); err != nil {
		t.Fatalf("a block mining a conflicting transaction with its child: %v", err)
	}
	if m, err := c.Get(ctx, a.ID); err != nil || !m.Conflicting {
		t.Fatalf("A, which the block's T beat: %+v (%v), want conflicting", m, err)
	}
	for _, won := range []*chain.Tx{tx, child, grandchild} {
		m, err := c.Get(ctx, won.ID, utxo.FieldOutputs)
		if err != nil {
			t.Fatal(err)
		}
		if m.Conflicting || len(m.BlockIDs) != 1 {
			t.Fatalf("%s, mined in the block: conflicting %v, blocks %v", won.ID, m.Conflicting, m.BlockIDs)
		}
	}
	sp, err := c.GetSpend(ctx, &utxo.Spend{TxID: coinbase.Hash, Vout: 0})
	if err != nil || sp.SpendingData == nil || sp.SpendingData.TxID != tx.ID {
		t.Fatalf("the coinbase's output: %+v (%v), want spent by T", sp, err)
	}
}
