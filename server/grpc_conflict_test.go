package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/internal/pathtest"
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
	prev, coinbases := ownChainOf(t, path, 102)
	coinbase, coinbase2 := coinbases[1], coinbases[2]
	_, c := servePathForTest(t, path, server.Options{Network: "mainnet"})
	a := ownSpend(49e8, coinbase)
	if _, err := c.Create(ctx, a, 101); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Spend(ctx, a); err != nil {
		t.Fatal(err)
	}
	tx := ownSpend(48e8, coinbase)
	child := ownSpend(47e8, wire.OutPoint{Hash: tx.ID})
	for _, lost := range []*chain.Tx{tx, child} {
		if _, err := c.Create(ctx, lost, 101, utxo.WithConflicting()); err != nil {
			t.Fatal(err)
		}
	}
	ghost := ownSpend(49e8, coinbase2)
	if _, err := c.Spend(ctx, ghost); err != nil {
		t.Fatal(err)
	}
	grandchild := ownSpend(46e8, wire.OutPoint{Hash: child.ID})
	w := ownSpend(48e8, coinbase2)
	b := ownBlockOf(t, prev, 102, ownScript, tx.Msg, child.Msg, grandchild.Msg, w.Msg)
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

// ownScript is what the blocks and transactions of ownChainOf pay.
var ownScript = []byte{0x51}

// ownChainOf connects n blocks of one coinbase each along path, and
// returns the last one's hash and the coinbases' outputs, by height.
func ownChainOf(t *testing.T, path *blockpath.Path, n int) (chainhash.Hash, []wire.OutPoint) {
	t.Helper()
	var prev chainhash.Hash
	var coinbases []wire.OutPoint
	for height := range uint32(n) {
		b := ownBlockOf(t, prev, height, ownScript)
		if err := path.Connect(context.Background(), b, height); err != nil {
			t.Fatalf("block %d: %v", height, err)
		}
		coinbases = append(coinbases, wire.OutPoint{Hash: b.Txs[0].ID})
		prev = b.Hash
	}
	return prev, coinbases
}

// ownSpend is a transaction of one output paying ownScript, spending from.
func ownSpend(value int64, from ...wire.OutPoint) *chain.Tx {
	msg := wire.NewMsgTx(1)
	for _, op := range from {
		msg.AddTxIn(wire.NewTxIn(&op, nil, nil))
	}
	msg.AddTxOut(wire.NewTxOut(value, ownScript))
	return chain.NewTx(msg)
}

// TestConnectBlockRefusesATransactionSpendingAnOutputTwice: a block whose
// transaction spends a coinbase's output with two inputs is refused by the
// daemon's ConnectBlock as InvalidArgument naming the check, before any of
// it is kept: the tip stays where it was. The store used to refuse it
// later, saying the transaction double spent "a transaction mined on the
// longest chain", itself.
func TestConnectBlockRefusesATransactionSpendingAnOutputTwice(t *testing.T) {
	ctx := context.Background()
	path := indexedPathOf(t, true)
	prev, coinbases := ownChainOf(t, path, 102)
	_, c := servePathForTest(t, path, server.Options{Network: "mainnet"})
	twice := ownSpend(49e8, coinbases[1], coinbases[1])
	b := ownBlockOf(t, prev, 102, ownScript, twice.Msg)
	_, _, err := c.ConnectBlock(ctx, b.Raw, 102)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "fails the duplicate input check") ||
		!strings.Contains(err.Error(), "inputs 0 and 1 both spend "+coinbases[1].String()) {
		t.Fatalf("a block spending an output twice in one transaction: %v, want InvalidArgument naming the duplicate input check", err)
	}
	if tip, _, err := path.Store().Tip(ctx); err != nil || tip.Height != 101 {
		t.Fatalf("the tip after the refusal: %+v (%v), want height 101", tip, err)
	}
}

// TestConnectBlockMinesAMempoolTransactionWhoseParentItSpentInFull: the
// daemon is asked to keep unmined transactions longer than fully spent
// ones (retentions 10 and 2, as a node's mempool expiry of two weeks is
// against 288 blocks). A validator stores C, which spends a coinbase's
// only output, and the network mines C eight blocks on. The coinbase used
// to be deleted meanwhile, and the block was refused for good (its
// input's transaction not found); the block height retention now covers
// the unmined one.
func TestConnectBlockMinesAMempoolTransactionWhoseParentItSpentInFull(t *testing.T) {
	ctx := context.Background()
	path := pathtest.Indexed(t, newStore(t, utxo.Options{BlockHeightRetention: 2, UnminedRetention: 10}), true)
	prev, coinbases := ownChainOf(t, path, 102)
	_, c := servePathForTest(t, path, server.Options{Network: "mainnet"})
	tx := ownSpend(49e8, coinbases[1])
	if _, err := c.Spend(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, tx, 101); err != nil {
		t.Fatal(err)
	}
	height := uint32(102)
	for ; height < 110; height++ {
		b := ownBlockOf(t, prev, height, ownScript)
		if _, _, err := c.ConnectBlock(ctx, b.Raw, height); err != nil {
			t.Fatalf("block %d: %v", height, err)
		}
		prev = b.Hash
	}
	b := ownBlockOf(t, prev, height, ownScript, tx.Msg)
	if _, _, err := c.ConnectBlock(ctx, b.Raw, height); err != nil {
		t.Fatalf("a block mining C, %d blocks after it was stored: %v", height-102, err)
	}
	if m, err := c.Get(ctx, tx.ID); err != nil || len(m.BlockIDs) != 1 || m.UnminedSince != 0 {
		t.Fatalf("C: %+v (%v), want it mined", m, err)
	}
}

// TestConnectBlockRefusesASpendOfADeletedChainTransactionsInput: a
// client deletes, through the daemon, a transaction a block mined. The
// network's next block spending the same output again is refused as a
// double spend: it used to connect, the deleted spender taken for one
// never created.
func TestConnectBlockRefusesASpendOfADeletedChainTransactionsInput(t *testing.T) {
	ctx := context.Background()
	path := indexedPathOf(t, true)
	prev, coinbases := ownChainOf(t, path, 102)
	_, c := servePathForTest(t, path, server.Options{Network: "mainnet"})
	tx := ownSpend(49e8, coinbases[1])
	b := ownBlockOf(t, prev, 102, ownScript, tx.Msg)
	if _, _, err := c.ConnectBlock(ctx, b.Raw, 102); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, tx.ID); err != nil {
		t.Fatal(err)
	}
	again := ownSpend(48e8, coinbases[1])
	next := ownBlockOf(t, b.Hash, 103, ownScript, again.Msg)
	if _, _, err := c.ConnectBlock(ctx, next.Raw, 103); status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "SPENT") {
		t.Fatalf("a block spending the deleted chain transaction's input again: %v, want FailedPrecondition, SPENT", err)
	}
}

// TestSetBlockHeightPrunesAClientsSpentTransactions: a client that drives
// the height itself, as Teranode's block assembly does (Create, Spend,
// SetMinedMulti, SetBlockHeight over gRPC, no ConnectBlock), gets a fully
// spent mined transaction deleted once its retention is past, as a
// connected block would. SetBlockHeight used to set the height alone, and
// on every engine but Sozu such a store kept every transaction for good.
func TestSetBlockHeightPrunesAClientsSpentTransactions(t *testing.T) {
	ctx := context.Background()
	_, c := serveForTest(t, newStore(t, utxo.Options{BlockHeightRetention: 2}), server.Options{})
	p := ownSpend(49e8, wire.OutPoint{Hash: chainhash.Hash{0xa1}})
	if _, err := c.Create(ctx, p, 1, utxo.WithMinedBlockInfo(model.MinedBlockInfo{BlockID: 1, BlockHeight: 1, OnLongestChain: true})); err != nil {
		t.Fatal(err)
	}
	spender := ownSpend(48e8, wire.OutPoint{Hash: p.ID})
	if _, err := c.Create(ctx, spender, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Spend(ctx, spender); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetMinedMulti(ctx, []chainhash.Hash{spender.ID}, model.MinedBlockInfo{BlockID: 2, BlockHeight: 2, OnLongestChain: true}); err != nil {
		t.Fatal(err)
	}
	height := uint32(2)
	for ; height < 10; height++ {
		if err := c.SetBlockHeight(ctx, height); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Get(ctx, p.ID); errors.Is(err, model.ErrTxNotFound) {
			break
		}
	}
	if _, err := c.Get(ctx, p.ID); !errors.Is(err, model.ErrTxNotFound) {
		t.Fatalf("P, spent in full by a transaction mined at 2, at height %d: %v, want it pruned", height, err)
	}
	if _, err := c.Get(ctx, spender.ID); err != nil {
		t.Fatalf("the spender, mined and unspent: %v", err)
	}
}
