package utxo

import (
	"testing"
)

const btcChain = "btc-mainnet-0-14131.blk"

// TestImportBitcoinChain replays the real chain and compares the store's
// summary with a UTXO set computed independently from the same file, and with
// the facts of the data's README.
func TestImportBitcoinChain(t *testing.T) {
	db := newStore(t, Options{})
	connectAll(t, db, chainBlocks(t, btcChain))
	got := summary(t, db)
	if rep := mustVerify(t, db); rep.Masters == 0 || rep.IndexTerms == 0 {
		t.Fatalf("verify checked nothing: %+v", rep)
	}
	want := referenceUTXOs(t, btcChain)
	if got != want {
		t.Fatalf("store summary %+v\nreference     %+v", got, want)
	}
	// Without the genesis coinbase, as Bitcoin Core counts: 13,416 outputs
	// and 5,000,000,000 satoshis less.
	readme := Summary{Blocks: 14132, Txs: 14247, Utxos: 13417, Satoshis: 70_660_000_000_000, Height: 14131,
		TxOuts: 13416, TotalAmount: 70_655_000_000_000}
	got.Digest, got.MuHash = "", ""
	if got != readme {
		t.Fatalf("summary %+v, the data's README says %+v", got, readme)
	}
}
