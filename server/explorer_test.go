package server_test

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"testing"

	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/server"
	"github.com/utxostore/utxostore/utxo"
)

// explorerPage is the page at path of the daemon at base, which must
// answer 200.
func explorerPage(t *testing.T, base, path string) string {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d\n%s", path, resp.StatusCode, body)
	}
	return string(body)
}

// TestTheExplorersBlockLinksLeadToBlocksWithoutTheIndex: on a daemon
// without --index, which finds a block by its height only, every block
// link of the front page, a block's page and a transaction's page leads
// to the block. The front page's hashes, a block's previous and next
// links and a transaction's block link used to name the block by hash,
// and each answered 400.
func TestTheExplorersBlockLinksLeadToBlocksWithoutTheIndex(t *testing.T) {
	ctx := context.Background()
	rules, err := chain.NetworkRules("mainnet", false)
	if err != nil {
		t.Fatal(err)
	}
	path, err := blockpath.Open(ctx, blockpath.Config{Store: newStore(t, utxo.Options{}), Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	chainBlocks := server.MainnetChainBlocks(t, 3)
	for height, b := range chainBlocks {
		if err := path.Connect(ctx, b, uint32(height)); err != nil {
			t.Fatal(err)
		}
	}
	srv, _ := servePathForTest(t, path, server.Options{Network: "mainnet"})
	base := "http://" + srv.HTTPAddr()
	blockLink := regexp.MustCompile(`href="(/block/[^"]*)"`)
	for _, page := range []string{"/", "/block/1", "/tx/" + chainBlocks[1].Txs[0].ID.String()} {
		links := blockLink.FindAllStringSubmatch(explorerPage(t, base, page), -1)
		if len(links) == 0 {
			t.Fatalf("%s links no block", page)
		}
		for _, l := range links {
			if code := getCode(t, base+l[1]); code != http.StatusOK {
				t.Errorf("%s links %s, which answers HTTP %d", page, l[1], code)
			}
		}
	}
}
