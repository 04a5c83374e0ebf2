package chain

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// Each expected value is SHA-256 over bytes written out by hand, so the
// test does not share the implementation's CompactSize encoder.
func TestUTXOHashVectors(t *testing.T) {
	var txid chainhash.Hash
	for i := range txid {
		txid[i] = byte(i) // 00 01 02 ... 1f, internal byte order
	}
	p2pkh := []byte{0x76, 0xa9, 0x14, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 0x88, 0xac}

	cases := []struct {
		name     string
		vout     uint32
		script   []byte
		satoshis uint64
		tail     []byte // bytes after the txid, written out
	}{
		{
			name: "one-byte varints", vout: 0, script: []byte{0x51}, satoshis: 1,
			tail: []byte{0x00, 0x51, 0x01},
		},
		{
			name: "vout 0xfd, satoshis 0x10000", vout: 0xfd, script: p2pkh, satoshis: 0x10000,
			tail: append(append([]byte{0xfd, 0xfd, 0x00}, p2pkh...), 0xfe, 0x00, 0x00, 0x01, 0x00),
		},
		{
			name: "vout 0x10000, 50 BTC, empty script", vout: 0x10000, script: nil, satoshis: 5_000_000_000,
			tail: []byte{0xfe, 0x00, 0x00, 0x01, 0x00, 0xff, 0x00, 0xf2, 0x05, 0x2a, 0x01, 0x00, 0x00, 0x00},
		},
		{
			name: "vout 0xfc, satoshis 0xffff", vout: 0xfc, script: []byte{0x6a, 0x00}, satoshis: 0xffff,
			tail: []byte{0xfc, 0x6a, 0x00, 0xfd, 0xff, 0xff},
		},
	}
	for _, c := range cases {
		want := sha256.Sum256(append(append([]byte{}, txid[:]...), c.tail...))
		if got := UTXOHash(txid, c.vout, c.script, c.satoshis); got != want {
			t.Errorf("%s: got %x, want %x", c.name, got, want)
		}
	}
}

// A frozen vector for a real output: the first output of the genesis
// coinbase. The expected value is pinned so that a change to the hash
// layout cannot go unnoticed.
func TestUTXOHashGenesisCoinbase(t *testing.T) {
	blk, err := ParseBlock(genesisBlock(t))
	if err != nil {
		t.Fatal(err)
	}
	tx := blk.Txs[0]
	out := tx.Msg.TxOut[0]
	var tail []byte
	tail = append(tail, tx.ID[:]...)
	tail = append(tail, 0x00)
	tail = append(tail, out.PkScript...)
	tail = append(tail, 0xff, 0x00, 0xf2, 0x05, 0x2a, 0x01, 0x00, 0x00, 0x00) // 5,000,000,000
	if tx.ID.String() != "4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b" {
		t.Fatalf("genesis coinbase txid %s", tx.ID)
	}
	got := UTXOHash(tx.ID, 0, out.PkScript, uint64(out.Value))
	if want := sha256.Sum256(tail); got != want {
		t.Errorf("got %x, want %x", got, want)
	}
	const pinned = "b896d6c9de3d37e0cbe6c8209104d0d478c92c17ee567b9792a3eb4aff1dce55"
	if hex.EncodeToString(got[:]) != pinned {
		t.Errorf("got %x, pinned %s", got, pinned)
	}
}
