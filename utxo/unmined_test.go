package utxo

import (
	"context"
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

// TestACreateBelowTheNextHeightIsStoredAtIt: a gRPC client that leaves
// Create's height unset, or a validator behind the store, creates at a
// height below the next block's. The store stores the transaction at the
// next height: unmined since 0 would read as mined, leaving it out of the
// mempool and its spends counted as the chain's (verify reports damage),
// and a conflicting one would be due for deletion already.
func TestACreateBelowTheNextHeightIsStoredAtIt(t *testing.T) {
	const retention = 5
	db := newStore(t, Options{BlockHeightRetention: retention})
	p, genesis := minedParentAtGenesis(t, db, 2)
	connectAll(t, db, []Block{{Hash: chainhash.DoubleHashH([]byte("1")), PrevHash: genesis.Hash, Height: 1, Txs: []*chain.Tx{coinbaseTx("c1", 1, 50e8)}}})
	tx := spendTx("T", []wire.OutPoint{out(p, 0)}, 1, 4e8)
	if _, err := db.Spend(ctx, tx); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, db, tx, 0)
	if m := mustGet(t, db, tx.ID); m.UnminedSince != 2 {
		t.Fatalf("unmined since %d, want 2, the next height", m.UnminedSince)
	}
	loser := spendTx("L", []wire.OutPoint{out(p, 1)}, 1, 4e8)
	mustCreate(t, db, loser, 0, WithConflicting())
	if m := mustGet(t, db, loser.ID); m.DeleteAtHeight != 2+retention {
		t.Fatalf("a conflicting transaction created at 0 is deleted at %d, want %d", m.DeleteAtHeight, 2+retention)
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
