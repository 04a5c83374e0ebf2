package server_test

import (
	"bufio"
	"context"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/internal/pathtest"
	"github.com/utxostore/utxostore/server"
	"github.com/utxostore/utxostore/utxo"
)

// TestBlockbookReadsAreCounted serves real blocks with the address index
// and the block store, and checks that the daemon's metrics count the
// Blockbook API's reads of both, as they count its reads of the store: an
// address's page reads its balance once, a block's page reads the block
// store, and /metrics says so by operation.
func TestBlockbookReadsAreCounted(t *testing.T) {
	srv, chainBlocks := indexedDaemon(t, 3, server.Options{})
	base := "http://" + srv.HTTPAddr()

	for _, op := range []string{"index.Balance", "index.History", "blockstore.Block"} {
		if n := operations(t, base, op); n != 0 {
			t.Fatalf("%s: %d calls before any request", op, n)
		}
	}
	// Block 1's coinbase pays to a public key: its output script in hex
	// names the address.
	script := hex.EncodeToString(chainBlocks[1].Txs[0].Msg.TxOut[0].PkScript)
	for _, url := range []string{base + "/api/v2/address/" + script, base + "/api/v2/block/1"} {
		if code := getCode(t, url); code != http.StatusOK {
			t.Fatalf("GET %s: HTTP %d", url, code)
		}
	}
	if n := operations(t, base, "index.Balance"); n != 1 {
		t.Errorf("one address page: %d index.Balance calls counted, want 1", n)
	}
	for _, op := range []string{"index.History", "index.TxAddresses", "index.BestBlock", "blockstore.Block"} {
		if n := operations(t, base, op); n == 0 {
			t.Errorf("an address page and a block page: no %s call counted", op)
		}
	}
}

// operations is the daemon's count of op's calls that succeeded, as its
// /metrics tells operators.
func operations(t *testing.T, base, op string) int {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	prefix := `utxo_operations_total{op="` + op + `",outcome="ok"} `
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if n, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			calls, err := strconv.Atoi(n)
			if err != nil {
				t.Fatalf("/metrics: %q", sc.Text())
			}
			return calls
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return 0 // no call yet
}

// indexedDaemon serves the first n mainnet blocks with the address index
// and the block store, Electrum listening too, with opts.
func indexedDaemon(t testing.TB, n int, opts server.Options) (*server.Server, []*chain.Block) {
	t.Helper()
	path, chainBlocks := indexedPathAt(t, n, n)
	opts.Network, opts.ElectrumAddr = "mainnet", "127.0.0.1:0"
	srv, _ := servePathForTest(t, path, opts)
	return srv, chainBlocks
}

// indexedPathAt is indexedPath holding the first connected of the real
// chain's first n blocks, which it returns.
func indexedPathAt(t testing.TB, n, connected int) (*blockpath.Path, []*chain.Block) {
	t.Helper()
	path := indexedPath(t)
	chainBlocks := server.MainnetChainBlocks(t, n)
	for height, b := range chainBlocks[:connected] {
		if err := path.Connect(context.Background(), b, uint32(height)); err != nil {
			t.Fatal(err)
		}
	}
	return path, chainBlocks
}

// indexedPath is an empty mainnet block path with the address index and
// the block store, as the daemon keeps with --index.
func indexedPath(t testing.TB) *blockpath.Path {
	t.Helper()
	return indexedPathOf(t, false)
}

// indexedPathOf is indexedPath, which checks no block's proof of work
// when trustProof is set, for a test's own mainnet blocks.
func indexedPathOf(t testing.TB, trustProof bool) *blockpath.Path {
	t.Helper()
	return pathtest.Indexed(t, newStore(t, utxo.Options{}), trustProof)
}
