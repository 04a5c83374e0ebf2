// Package pathtest builds, for tests, the block path a daemon serving
// --index keeps: a store, the address index and the block store.
package pathtest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/blockstore"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/utxo"
)

// Indexed is a mainnet block path over store, with an empty address index
// and block store in a directory of the test's, all closed when the test
// ends. trustProof checks no block's proof of work, for a test's own
// mainnet blocks.
func Indexed(t testing.TB, store *utxo.DB, trustProof bool) *blockpath.Path {
	t.Helper()
	dir := t.TempDir()
	idx, err := index.Open(filepath.Join(dir, "index"), index.Options{Coin: "Bitcoin", NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	blocks, err := blockstore.Open(filepath.Join(dir, "blocks"), blockstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { blocks.Close() })
	rules, err := chain.NetworkRules("mainnet", trustProof)
	if err != nil {
		t.Fatal(err)
	}
	path, err := blockpath.Open(context.Background(), blockpath.Config{Store: store, Rules: rules, Blocks: blocks, Index: idx})
	if err != nil {
		t.Fatal(err)
	}
	return path
}
