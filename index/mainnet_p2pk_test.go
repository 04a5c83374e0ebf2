package index

import (
	"bytes"
	"testing"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/txscript"
)

// On the real early chain, which pays mostly to pay-to-pubkey scripts,
// every such output is indexed under the "1…" address of its key, the
// raw script has no entry, and the busiest addresses hold the balances
// the raw blocks give them. The expectations come from btcd's own script
// classification and address encoding, not from AddrDesc.
func TestMainnetP2PKUnderP2PKH(t *testing.T) {
	if testing.Short() {
		t.Skip("imports 14,132 blocks")
	}
	chain := mainnetChain(t)
	ix := bulkIndexed(t, chain)
	defer ix.Close()

	var p2pk int
	for _, b := range chain {
		for _, tx := range b.Txs {
			for i, o := range tx.Outputs {
				if txscript.GetScriptClass(o.Script) != txscript.PubKeyTy {
					continue
				}
				p2pk++
				addr := p2pkAddress(t, o.Script)
				ta, ok, err := ix.TxAddresses(tx.ID)
				if err != nil || !ok {
					t.Fatalf("tx %s not indexed: %v", tx.ID, err)
				}
				if want := p2pkhOf(t, addr); !bytes.Equal(ta.Outputs[i].AddrDesc, want) {
					t.Fatalf("%s:%d (P2PK of %s) has addrDesc %x, want %x", tx.ID, i, addr, ta.Outputs[i].AddrDesc, want)
				}
				raw, err := ix.Balance(o.Script)
				if err != nil {
					t.Fatal(err)
				}
				if raw.Txs != 0 {
					t.Fatalf("raw P2PK script of %s:%d has a balance entry %+v", tx.ID, i, raw)
				}
			}
		}
	}
	if p2pk < 14000 {
		t.Fatalf("only %d P2PK outputs in blocks 0..14131", p2pk)
	}
	// address -> unspent value, from the blocks.
	balances := map[string]uint64{}
	for _, o := range utxoSetOf(chain) {
		if txscript.GetScriptClass(o.Script) == txscript.PubKeyTy {
			balances[p2pkAddress(t, o.Script)] += o.Value
		}
	}
	if balances["1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa"] != 5_000_000_000 {
		t.Fatalf("genesis address holds %d sat in the blocks", balances["1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa"])
	}
	for _, addr := range []string{"1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "12cbQLTFMXRnSzktFkuoG3eHoMeFtpTu3S", "1Q2TWHE3GMdB6BZKafqwxXtWAWgFt5Jvm3"} {
		got, err := ix.Balance(p2pkhOf(t, addr))
		if err != nil {
			t.Fatal(err)
		}
		if got.Balance != balances[addr] || got.Txs == 0 {
			t.Errorf("%s: index balance %d sat over %d txs, blocks say %d sat", addr, got.Balance, got.Txs, balances[addr])
		}
	}
	t.Logf("%d P2PK outputs indexed under their P2PKH descriptor", p2pk)
}

// p2pkAddress is the "1…" address of the key a pay-to-pubkey script pays.
func p2pkAddress(t *testing.T, script []byte) string {
	t.Helper()
	pk, err := btcutil.NewAddressPubKey(script[1:len(script)-1], &chaincfg.MainNetParams)
	if err != nil {
		t.Fatal(err)
	}
	return pk.AddressPubKeyHash().EncodeAddress()
}
