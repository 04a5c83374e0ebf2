package index

import (
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg"
)

// The genesis block, converted and connected, is stored under the txid
// and block hash strings every explorer shows: Blockbook's byte order.
func TestFromWireBlockGenesis(t *testing.T) {
	b := FromWireBlock(chaincfg.MainNetParams.GenesisBlock, 0)
	const (
		hash = "000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f"
		txid = "4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b"
	)
	if b.Hash.String() != hash || len(b.Txs) != 1 || b.Txs[0].ID.String() != txid || !b.Txs[0].Inputs[0].Coinbase ||
		b.Time != 1231006505 || b.Size != 285 || b.Txs[0].Outputs[0].Value != 5_000_000_000 {
		t.Fatalf("genesis %+v", b)
	}
	ix := openTest(t, t.TempDir(), Options{})
	defer ix.Close()
	connectAll(t, ix, []*Block{b})
	if v := dump(t, ix, cfHeight)["00000000"]; !strings.HasPrefix(v, hash+"495fab29"+"01") {
		t.Fatalf("height 0 value %s", v)
	}
	if _, ok := dump(t, ix, cfTxAddresses)[txid]; !ok {
		t.Fatalf("txAddresses not keyed by %s", txid)
	}
}
