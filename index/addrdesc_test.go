package index

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/txscript"
)

// The genesis coinbase output, an uncompressed pay-to-pubkey script, is
// Blockbook's addrDesc of 1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa.
const genesisScriptHex = "4104678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f61deb649f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5fac"

func p2pkhOf(t *testing.T, addr string) []byte {
	t.Helper()
	a, err := btcutil.DecodeAddress(addr, &chaincfg.MainNetParams)
	if err != nil {
		t.Fatal(err)
	}
	s, err := txscript.PayToAddrScript(a)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAddrDescP2PK(t *testing.T) {
	genesis, _ := hex.DecodeString(genesisScriptHex)
	if got, want := AddrDesc(genesis), p2pkhOf(t, "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa"); !bytes.Equal(got, want) {
		t.Fatalf("genesis P2PK: addrDesc %x, want %x", got, want)
	}

	compressedKey := bytes.Repeat([]byte{0x02}, 33)
	compressed := append(append([]byte{txscript.OP_DATA_33}, compressedKey...), txscript.OP_CHECKSIG)
	if got, want := AddrDesc(compressed), p2pkhScript(btcutil.Hash160(compressedKey)); !bytes.Equal(got, want) {
		t.Fatalf("compressed P2PK: addrDesc %x, want %x", got, want)
	}

	// Blockbook checks the first byte against either push, whatever the
	// length: a 35-byte script that starts with a 65-byte push converts too.
	mismatched := append([]byte{txscript.OP_DATA_65}, compressed[1:]...)
	if got, want := AddrDesc(mismatched), p2pkhScript(btcutil.Hash160(compressedKey)); !bytes.Equal(got, want) {
		t.Fatalf("35-byte script with a 65-byte push: addrDesc %x, want %x", got, want)
	}

	unchanged := map[string][]byte{
		"empty":             nil,
		"P2PKH":             p2pkhOf(t, "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa"),
		"no OP_CHECKSIG":    append(append([]byte{txscript.OP_DATA_33}, compressedKey...), txscript.OP_NOP),
		"other push":        append(append([]byte{txscript.OP_DATA_32}, compressedKey...), txscript.OP_CHECKSIG),
		"one byte too long": append(append([]byte{txscript.OP_DATA_33}, compressedKey...), txscript.OP_CHECKSIG, txscript.OP_CHECKSIG),
		"OP_RETURN":         {txscript.OP_RETURN, 0x01, 0xff},
	}
	for name, s := range unchanged {
		if got := AddrDesc(s); !bytes.Equal(got, s) {
			t.Errorf("%s: addrDesc %x, want the script %x", name, got, s)
		}
	}
}
