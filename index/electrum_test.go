package index

import (
	"bytes"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/btcutil"
)

// electrumChain pays one key by a pay-to-pubkey and a pay-to-pubkey-hash
// output in block 0 (the index files both under one addrDesc), spends
// both in block 1, one of them from a transaction whose parent is in the
// same block, and pays the key's hash again in block 2.
func electrumChain() (chain []*Block, p2pk, p2pkh []byte) {
	key := append([]byte{0x02}, bytes.Repeat([]byte{7}, 32)...)
	p2pk = append(append([]byte{0x21}, key...), 0xac)
	p2pkh = p2pkhScript(btcutil.Hash160(key))
	other := []byte{0x51}
	cb0 := Tx{ID: hashOf(1), Inputs: []Outpoint{{Coinbase: true}}, Outputs: []Output{{Script: p2pk, Value: 50}, {Script: p2pkh, Value: 30}}}
	cb1 := Tx{ID: hashOf(2), Inputs: []Outpoint{{Coinbase: true}}, Outputs: []Output{{Script: p2pk, Value: 5}}}
	spend := Tx{ID: hashOf(3), Inputs: []Outpoint{{TxID: hashOf(1), Vout: 1}, {TxID: hashOf(1), Vout: 0}, {TxID: hashOf(2), Vout: 0}}, Outputs: []Output{{Script: other, Value: 85}}}
	cb2 := Tx{ID: hashOf(4), Inputs: []Outpoint{{Coinbase: true}}, Outputs: []Output{{Script: p2pkh, Value: 9}}}
	return []*Block{
		{Height: 0, Hash: hashOf(10), Txs: []Tx{cb0}},
		{Height: 1, Hash: hashOf(11), Txs: []Tx{cb1, spend}},
		{Height: 2, Hash: hashOf(12), Txs: []Tx{cb2}},
	}, p2pk, p2pkh
}

// The Electrum columns tell a pay-to-pubkey script from the
// pay-to-pubkey-hash script it shares an addrDesc with, for outputs and
// for the inputs that spend them, whether the blocks are connected one by
// one or in bulk across flushes.
func TestElectrumColumns(t *testing.T) {
	chain, p2pk, p2pkh := electrumChain()
	one := openTest(t, t.TempDir(), Options{NoSync: true})
	defer one.Close()
	connectAll(t, one, chain)
	bulk := openTest(t, t.TempDir(), Options{NoSync: true})
	defer bulk.Close()
	if err := connectBulk(t, bulk, 1, chain[:1]).Close(); err != nil {
		t.Fatal(err)
	}
	if err := connectBulk(t, bulk, 5, chain[1:]).Close(); err != nil {
		t.Fatal(err)
	}
	for name, ix := range map[string]*Index{"connect": one, "bulk": bulk} {
		if !ix.HasElectrum() {
			t.Fatalf("%s: a new index lacks the Electrum columns", name)
		}
		for _, s := range [][]byte{p2pk, p2pkh, {0x51}} {
			got, ok, err := ix.Script(HashScript(s))
			if err != nil || !ok || !bytes.Equal(got, s) {
				t.Fatalf("%s: Script(%x) = %x %v %v", name, s, got, ok, err)
			}
		}
		if _, ok, _ := ix.Script(HashScript([]byte{0x52})); ok {
			t.Fatalf("%s: a script no output pays has an entry", name)
		}
		for _, c := range []struct {
			tx    byte
			n     uint32
			input bool
			want  bool
		}{
			{1, 0, false, true}, {1, 1, false, false}, {2, 0, false, true},
			{3, 0, true, false}, {3, 1, true, true}, {3, 2, true, true},
			{4, 0, false, false},
		} {
			got, err := ix.PaysP2PK(hashOf(c.tx), c.n, c.input)
			if err != nil || got != c.want {
				t.Errorf("%s: PaysP2PK(tx %d, %d, input %v) = %v %v, want %v", name, c.tx, c.n, c.input, got, err, c.want)
			}
		}
	}
}

// An index holding blocks but not the marker predates the columns: it
// says so, and keeps saying so when reopened.
func TestElectrumColumnsMissing(t *testing.T) {
	chain, _, _ := electrumChain()
	dir := t.TempDir()
	ix := openTest(t, dir, Options{NoSync: true})
	connectAll(t, ix, chain)
	if err := ix.db.Delete(cfScripts.key(), nil); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		ix = openTest(t, dir, Options{NoSync: true})
		if ix.HasElectrum() {
			t.Fatal("an index without the marker claims the Electrum columns")
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A bulk import into an index with no pay-to-pubkey marks knows every
// pay-to-pubkey output it connects, so it marks the inputs that spend
// them, across flushes and a disconnection, without reading the p2pk
// column; an import into an index that holds marks loads them, or, when
// they are more than it loads, reads the column for outputs from before
// it.
func TestBulkMarksP2PKInputsWithoutReading(t *testing.T) {
	chain, _, p2pkh := electrumChain()
	// A branch that replaces block 1 spends block 0's pay-to-pubkey
	// output from another transaction.
	respend := Tx{ID: hashOf(6), Inputs: []Outpoint{{TxID: hashOf(1), Vout: 0}}, Outputs: []Output{{Script: []byte{0x51}, Value: 50}}}
	b1b := &Block{Height: 1, Hash: hashOf(14), Txs: []Tx{{ID: hashOf(5), Inputs: []Outpoint{{Coinbase: true}}, Outputs: []Output{{Script: p2pkh, Value: 5}}}, respend}}
	want := blockByBlockColumns(t, []*Block{chain[0], b1b, chain[2]})

	bx := openTest(t, t.TempDir(), Options{NoSync: true})
	defer bx.Close()
	bk := connectBulk(t, bx, 1, chain[:2]) // a flush after each block
	if err := bk.Disconnect(1, chain[1].Hash); err != nil {
		t.Fatal(err)
	}
	connectThrough(t, bk, []*Block{b1b, chain[2]})
	if bk.ws.reads.total() != 0 {
		t.Fatalf("a bulk import into an empty index looked for %d values in the database", bk.ws.reads.total())
	}
	if err := bk.Close(); err != nil {
		t.Fatal(err)
	}
	if d := diffColumns(want, dumpAll(t, bx)); d != "" {
		t.Fatalf("bulk differs:\n%s", d)
	}
	for _, in := range []struct {
		tx   byte
		n    uint32
		want bool
	}{{6, 0, true}, {3, 1, true}, {3, 2, true}, {3, 0, false}} {
		if got, err := bx.PaysP2PK(hashOf(in.tx), in.n, true); err != nil || got != in.want {
			t.Errorf("PaysP2PK(tx %d, input %d) = %v %v, want %v", in.tx, in.n, got, err, in.want)
		}
	}

	// Into an index that holds marks, the import loads the marked outputs
	// when they fit its bound, and otherwise reads the column for an
	// output connected before it; either marks the input.
	for _, limit := range []int{maxLoadedP2PK, 0} {
		later := openTest(t, t.TempDir(), Options{NoSync: true})
		defer later.Close()
		if err := connectBulk(t, later, 1, chain[:1]).Close(); err != nil {
			t.Fatal(err)
		}
		bk, err := later.beginBulk(1, newAddressFilter(), limit)
		if err != nil {
			t.Fatal(err)
		}
		if bk.ws.allP2PK != (limit > 0) {
			t.Fatalf("limit %d: the import holds every marked output: %v", limit, bk.ws.allP2PK)
		}
		connectThrough(t, bk, chain[1:2])
		if marks := bk.ws.reads.marks; (marks == 0) != (limit > 0) {
			t.Fatalf("limit %d: the import read %d marks of the p2pk column", limit, marks)
		}
		if err := bk.Close(); err != nil {
			t.Fatal(err)
		}
		if got, err := later.PaysP2PK(hashOf(3), 1, true); err != nil || !got {
			t.Fatalf("limit %d: the input spending a pay-to-pubkey output from before the import is not marked (%v, %v)", limit, got, err)
		}
		if d := diffColumns(blockByBlockColumns(t, chain[:2]), dumpAll(t, later)); d != "" {
			t.Fatalf("limit %d: two imports differ from block-by-block connect:\n%s", limit, d)
		}
	}
}

// A bulk import into an index whose p2pk column holds a key that is no
// mark is refused with a CorruptError naming the column, and the index
// goes on taking blocks one by one.
func TestBulkRefusesADamagedP2PKColumn(t *testing.T) {
	chain, _, _ := electrumChain()
	ix := openTest(t, t.TempDir(), Options{NoSync: true})
	defer ix.Close()
	connectAll(t, ix, chain[:1])
	if err := ix.db.Set(cfP2PK.key([]byte{1, 2, 3}), nil, nil); err != nil {
		t.Fatal(err)
	}
	_, err := ix.BeginBulk(1)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Column != "p2pk" {
		t.Fatalf("BeginBulk over a damaged p2pk column: %v", err)
	}
	connectAll(t, ix, chain[1:2])
}
