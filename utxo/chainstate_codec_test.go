package utxo

import (
	"errors"
	"reflect"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// TestChainStateRoundTrip: the chain state and a block's metadata, with
// every field set, read back as written; every prefix of them, and a
// trailing byte, is refused as damaged.
func TestChainStateRoundTrip(t *testing.T) {
	root := chainhash.Hash{9}
	block := &connectedBlock{Hash: chainhash.Hash{1}, PrevHash: chainhash.Hash{2}, ID: 7, Txs: 300,
		Conflicting: []chainhash.Hash{{3}, {4}}, Size: 215, Time: 1231469744, Version: -2, MerkleRoot: &root,
		Bits: 486604799, Nonce: 1639830024}
	cs := chainState{Height: 12, HasTip: true, TipHeight: 12, TipHash: chainhash.Hash{1}, NextBlockID: 8,
		Blocks: 13, Txs: 400, First: 3, TipBlock: block, Stats: []byte{4, 5}, StatsBehind: 6}
	readState := func(b []byte) (any, error) {
		var got chainState
		err := got.unmarshal(b)
		return got, err
	}
	readBlock := func(b []byte) (any, error) {
		var got connectedBlock
		err := got.unmarshal(b)
		return &got, err
	}
	for _, c := range []struct {
		name  string
		raw   []byte
		read  func([]byte) (any, error)
		value any
	}{
		{"chain state", cs.marshal(), readState, cs},
		{"block", block.marshal(), readBlock, block},
		{"empty chain state", (&chainState{NextBlockID: 1}).marshal(), readState, chainState{NextBlockID: 1}},
	} {
		got, err := c.read(c.raw)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(got, c.value) {
			t.Fatalf("%s: read %+v, wrote %+v", c.name, got, c.value)
		}
		for n := range len(c.raw) {
			if _, err := c.read(c.raw[:n]); !errors.Is(err, errDamaged) {
				t.Fatalf("%s cut to %d of %d bytes: %v, want damaged", c.name, n, len(c.raw), err)
			}
		}
		if _, err := c.read(append(c.raw[:len(c.raw):len(c.raw)], 0)); !errors.Is(err, errDamaged) {
			t.Fatalf("%s with a trailing byte: %v, want damaged", c.name, err)
		}
	}
}
