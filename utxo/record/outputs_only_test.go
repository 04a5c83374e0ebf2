package record

import (
	"bytes"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/utxo/model"
)

// TestOutputsOnly: a transaction built from its outputs alone keeps them
// in its master, whatever the number of records, and the flag survives
// Encode/Decode and a spend through a View; outputs the snapshot lacks are
// not stored, so spending them is UTXO_NOT_FOUND.
func TestOutputsOnly(t *testing.T) {
	h := func(b byte) *chainhash.Hash { return &chainhash.Hash{b} }
	wrapper := []byte("the outputs, as a UTXOWrapper")
	recs, err := Build(BuildParams{
		TxID: chainhash.Hash{9}, UtxoHashes: []*chainhash.Hash{nil, h(1), nil, h(3), h(4)},
		Tx: wrapper, OutputsOnly: true, BatchSize: 2, CurrentHeight: 50,
		MinedBlocks: []model.MinedBlockInfo{{BlockHeight: 50, OnLongestChain: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := recs[0]
	if len(recs) != 3 || m.External || !m.OutputsOnly || !bytes.Equal(m.Tx, wrapper) {
		t.Fatalf("%d records; master external %v, outputs only %v, tx %q", len(recs), m.External, m.OutputsOnly, m.Tx)
	}
	back, err := Decode(m.Encode())
	if err != nil || !back.OutputsOnly || !bytes.Equal(back.Tx, wrapper) {
		t.Fatalf("decoded: outputs only %v, tx %q, %v", back.OutputsOnly, back.Tx, err)
	}
	v, err := Inspect(m.Encode())
	if err != nil {
		t.Fatal(err)
	}
	opts := SpendOptions{CurrentHeight: 60}
	if _, errs, err := v.SpendMulti([]SpendItem{{Offset: 1, UtxoHash: *h(1), Spending: model.SpendingData{TxID: chainhash.Hash{7}}}}, opts); err != nil || errs != nil {
		t.Fatalf("spending a stored output: %v %v", err, errs)
	}
	spent, err := Decode(v.AppendEncode(nil))
	if err != nil || !spent.OutputsOnly || !bytes.Equal(spent.Tx, wrapper) || !spent.Utxos[1].IsSpent() {
		t.Fatalf("after the spend: %+v, %v", spent, err)
	}
	_, errs, err := spent.SpendMulti([]SpendItem{{Offset: 0, UtxoHash: chainhash.Hash{}, Spending: model.SpendingData{TxID: chainhash.Hash{7}}}}, opts)
	if len(errs) != 1 || !errors.Is(errs[0], model.ErrUtxoNotFound) {
		t.Fatalf("spending an output the snapshot lacks: %v %v", errs, err)
	}
}
