package utxo

import (
	"context"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
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
