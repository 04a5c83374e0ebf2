package chain_test

import (
	"bytes"
	"testing"

	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
)

// TestTxOutputReadsOneOutput: every output of the real chains'
// transactions, and of a segwit one, read alone equals the parsed one; an
// output past the last is refused.
func TestTxOutputReadsOneOutput(t *testing.T) {
	check := func(tx *chain.Tx) {
		t.Helper()
		for vout, out := range tx.Msg.TxOut {
			value, script, err := chain.TxOutput(tx.Raw, uint32(vout))
			if err != nil || value != uint64(out.Value) || !bytes.Equal(script, out.PkScript) {
				t.Fatalf("%s output %d: %d %x (%v), want %d %x", tx.ID, vout, value, script, err, out.Value, out.PkScript)
			}
		}
		if _, _, err := chain.TxOutput(tx.Raw, uint32(len(tx.Msg.TxOut))); err == nil {
			t.Fatalf("%s: output %d, past the last, was read", tx.ID, len(tx.Msg.TxOut))
		}
	}
	for _, b := range mainnetBlocks(t) {
		for _, tx := range b.Txs {
			check(tx)
		}
	}
	for _, b := range bsvBlocks(t) {
		for _, tx := range b.Txs {
			check(tx)
		}
	}
	segwit := wire.NewMsgTx(2)
	segwit.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: 1}, Witness: wire.TxWitness{{1, 2, 3}}})
	segwit.AddTxOut(wire.NewTxOut(7, []byte{0x51}))
	segwit.AddTxOut(wire.NewTxOut(9, []byte{0x00, 0x14, 1, 2}))
	check(chain.NewTx(segwit))
}
