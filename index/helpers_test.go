package index

import (
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/cockroachdb/pebble"
)

func openTest(t testing.TB, dir string, opts Options) *Index {
	t.Helper()
	if opts.Coin == "" {
		opts.Coin = "Bitcoin"
	}
	ix, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return ix
}

// snapshot is every key and value of one column, hex encoded, keyed
// without the prefix.
type snapshot map[string]string

// dump reads the columns straight from Pebble, bypassing the codecs.
func dump(t testing.TB, ix *Index, c column) snapshot {
	t.Helper()
	lo, hi := c.bounds()
	it, err := ix.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	s := snapshot{}
	for it.First(); it.Valid(); it.Next() {
		s[hex.EncodeToString(it.Key()[1:])] = hex.EncodeToString(it.Value())
	}
	return s
}

// dataColumns are the columns whose bytes must round-trip; default holds
// the internal state, which carries a timestamp.
var dataColumns = []column{cfHeight, cfAddresses, cfBlockTxs, cfTransactions, cfFiatRates, cfAddressBalance, cfTxAddresses}

func dumpAll(t testing.TB, ix *Index) map[column]snapshot {
	m := map[column]snapshot{}
	for _, c := range dataColumns {
		m[c] = dump(t, ix, c)
	}
	return m
}

// diffColumns describes the first differences between two dumps.
func diffColumns(want, got map[column]snapshot) string {
	var sb strings.Builder
	for _, c := range dataColumns {
		w, g := want[c], got[c]
		keys := map[string]bool{}
		for k := range w {
			keys[k] = true
		}
		for k := range g {
			keys[k] = true
		}
		var ks []string
		for k := range keys {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		n := 0
		for _, k := range ks {
			if w[k] != g[k] && n < 5 {
				fmt.Fprintf(&sb, "%s key %s:\n  want %q\n  got  %q\n", c, k, w[k], g[k])
				n++
			}
		}
	}
	return sb.String()
}

// hashOf builds a hash whose internal (btcd) byte 0 is b, so its stored
// (display-order) form ends in b.
func hashOf(b byte) chainhash.Hash {
	var h chainhash.Hash
	h[0] = b
	return h
}

// packedHex is the stored form of hashOf(b), written independently of
// the code under test: 31 zero bytes, then b.
func packedHex(b byte) string {
	return strings.Repeat("00", 31) + fmt.Sprintf("%02x", b)
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// bulkIndexed is a new index in a temporary directory that has connected
// chain in bulk.
func bulkIndexed(t testing.TB, chain []*Block) *Index {
	t.Helper()
	ix := openTest(t, t.TempDir(), Options{NoSync: true})
	if err := connectBulk(t, ix, 2000, chain).Close(); err != nil {
		t.Fatal(err)
	}
	return ix
}

// outpoint names an output of a transaction.
type outpoint struct {
	txid chainhash.Hash
	vout uint32
}

// utxoSetOf is the set of outputs chain leaves unspent, computed straight
// from its blocks, not by the index.
func utxoSetOf(chain []*Block) map[outpoint]Output {
	set := map[outpoint]Output{}
	for _, b := range chain {
		for _, tx := range b.Txs {
			for _, in := range tx.Inputs {
				if !in.Coinbase {
					delete(set, outpoint{in.TxID, in.Vout})
				}
			}
			for i, o := range tx.Outputs {
				set[outpoint{tx.ID, uint32(i)}] = o
			}
		}
	}
	return set
}

// connectAll connects chain to ix block by block.
func connectAll(t testing.TB, ix *Index, chain []*Block) {
	t.Helper()
	for _, b := range chain {
		if err := ix.ConnectBlock(b); err != nil {
			t.Fatalf("connect %d: %v", b.Height, err)
		}
	}
}

// blockByBlockColumns is every column of a new index after chain is
// connected block by block: what a bulk import of chain must leave.
func blockByBlockColumns(t testing.TB, chain []*Block) map[column]snapshot {
	t.Helper()
	ix := openTest(t, t.TempDir(), Options{NoSync: true})
	defer ix.Close()
	connectAll(t, ix, chain)
	return dumpAll(t, ix)
}

// connectBulk begins a bulk import on ix that flushes every flushEvery
// blocks and connects chain through it, leaving it to the caller to close.
func connectBulk(t testing.TB, ix *Index, flushEvery int, chain []*Block) *Bulk {
	t.Helper()
	bk, err := ix.BeginBulk(flushEvery)
	if err != nil {
		t.Fatal(err)
	}
	connectThrough(t, bk, chain)
	return bk
}

// connectThrough connects chain through the open bulk import bk.
func connectThrough(t testing.TB, bk *Bulk, chain []*Block) {
	t.Helper()
	for _, b := range chain {
		if err := bk.Connect(b); err != nil {
			t.Fatal(err)
		}
	}
}

// total is every read a workset counted.
func (l lookups) total() int { return l.txAddresses + l.balances + l.marks }
