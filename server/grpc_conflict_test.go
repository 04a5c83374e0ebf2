package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/server"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// TestConnectBlockTakesWhatTheMempoolHolds: a validator stores A, which
// spends a coinbase's output, and then T, which spends it too and lost the
// race, and T's child C, both as conflicting; it also spent another
// coinbase's output for G and stopped before creating G. The network's
// next block mines T, C and C's child, and W, which spends G's output.
// The daemon's ConnectBlock takes the block: T, C and their child win, A
// loses, W takes the output from G. It used to refuse the block (C's
// input CONFLICTING, or G not found) every time it was sent, leaving the
// daemon behind the network for good. An Unspend of the block's spends is
// then refused with SPENT, and the chain keeps them.
func TestConnectBlockTakesWhatTheMempoolHolds(t *testing.T) {
	ctx := context.Background()
	path := indexedPathOf(t, true)
	script := []byte{0x51}
	var prev chainhash.Hash
	var coinbase, coinbase2 wire.OutPoint
	for height := uint32(0); height <= 101; height++ {
		b := ownBlockOf(t, prev, height, script)
		if err := path.Connect(ctx, b, height); err != nil {
			t.Fatalf("block %d: %v", height, err)
		}
		switch height {
		case 1:
			coinbase = wire.OutPoint{Hash: b.Txs[0].ID}
		case 2:
			coinbase2 = wire.OutPoint{Hash: b.Txs[0].ID}
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
	if _, err := c.Create(ctx, a, 101); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Spend(ctx, a); err != nil {
		t.Fatal(err)
	}
	tx := spend(coinbase, 48e8)
	child := spend(wire.OutPoint{Hash: tx.ID}, 47e8)
	for _, lost := range []*chain.Tx{tx, child} {
		if _, err := c.Create(ctx, lost, 101, utxo.WithConflicting()); err != nil {
			t.Fatal(err)
		}
	}
	ghost := spend(coinbase2, 49e8)
	if _, err := c.Spend(ctx, ghost); err != nil {
		t.Fatal(err)
	}
	grandchild := spend(wire.OutPoint{Hash: child.ID}, 46e8)
	w := spend(coinbase2, 48e8)
	b := ownBlockOf(t, prev, 102, script, tx.Msg, child.Msg, grandchild.Msg, w.Msg)
	if _, _, err := c.ConnectBlock(ctx, b.Raw, 102); err != nil {
		t.Fatalf("a block mining a conflicting transaction with its child, and taking an output from a transaction never created: %v", err)
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
	for _, s := range []struct {
		out     wire.OutPoint
		spender *chain.Tx
	}{{coinbase, tx}, {coinbase2, w}} {
		sp, err := c.GetSpend(ctx, &utxo.Spend{TxID: s.out.Hash, Vout: s.out.Index})
		if err != nil || sp.SpendingData == nil || sp.SpendingData.TxID != s.spender.ID {
			t.Fatalf("%s: %+v (%v), want spent by %s", s.out, sp, err, s.spender.ID)
		}
	}
	err := c.Unspend(ctx, []*utxo.Spend{{TxID: coinbase.Hash, Vout: 0}}, false)
	if !errors.Is(err, model.ErrSpent) || !strings.Contains(err.Error(), "mined on the longest chain at height 102") {
		t.Fatalf("Unspend of the block's spend: %v, want SPENT, mined at height 102", err)
	}
	if sp, err := c.GetSpend(ctx, &utxo.Spend{TxID: coinbase.Hash, Vout: 0}); err != nil || sp.SpendingData == nil || sp.SpendingData.TxID != tx.ID {
		t.Fatalf("after the refused Unspend, the coinbase's output: %+v (%v), want spent by T", sp, err)
	}
}
