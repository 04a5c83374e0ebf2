package utxo

import (
	"context"
	"fmt"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
)

// listed is an UnminedLister over a fixed list.
type listed []*UnminedTransaction

func (l listed) GetUnminedTxIterator(context.Context) (UnminedTxIterator, error) {
	return &sliceIterator{list: l}, nil
}

// TestMempoolLeavesOutTransactionsBeingCreated: the mempool a wallet or
// an explorer shows is the unmined iterator's list, in its order, less
// the transactions whose records are still being written.
func TestMempoolLeavesOutTransactionsBeingCreated(t *testing.T) {
	l := listed{{TxID: chainhash.Hash{1}}, {TxID: chainhash.Hash{2}, Creating: true}, {TxID: chainhash.Hash{3}}}
	got, err := Mempool(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].TxID != l[0].TxID || got[1].TxID != l[2].TxID {
		t.Fatalf("the mempool of %v: %v, want the first and the last", l, got)
	}
}

// TestACreateBelowTheStoresHeightIsStoredAtIt: a gRPC client that leaves
// Create's height unset, or a validator behind the store, creates at a
// height below the store's. The store stores the transaction at its own
// height: unmined since 0 would read as mined, leaving it out of the
// mempool and its spends counted as the chain's (verify reports damage),
// and a conflicting one would be due for deletion already.
func TestACreateBelowTheStoresHeightIsStoredAtIt(t *testing.T) {
	const retention = 5
	db := newStore(t, Options{BlockHeightRetention: retention})
	p, genesis := minedParentAtGenesis(t, db, 2)
	blocks := []Block{genesis}
	for h := uint32(1); h <= 3; h++ {
		b := Block{Hash: chainhash.DoubleHashH(fmt.Append(nil, h)), PrevHash: blocks[h-1].Hash, Height: h, Txs: []*chain.Tx{coinbaseTx(fmt.Sprint("c", h), 1, 50e8)}}
		connectAll(t, db, []Block{b})
		blocks = append(blocks, b)
	}
	tx := spendTx("T", []wire.OutPoint{out(p, 0)}, 1, 4e8)
	if _, err := db.Spend(ctx, tx); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, db, tx, 0)
	if m := mustGet(t, db, tx.ID); m.UnminedSince != 3 {
		t.Fatalf("unmined since %d, want 3, the store's height", m.UnminedSince)
	}
	loser := spendTx("L", []wire.OutPoint{out(p, 1)}, 1, 4e8)
	mustCreate(t, db, loser, 1, WithConflicting())
	if m := mustGet(t, db, loser.ID); m.DeleteAtHeight != 3+retention {
		t.Fatalf("a conflicting transaction created at 1 is deleted at %d, want %d", m.DeleteAtHeight, 3+retention)
	}
	pool, err := Mempool(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if len(pool) != 1 || pool[0].TxID != tx.ID {
		t.Fatalf("mempool %v, want T alone", pool)
	}
	mustVerify(t, db)
}
