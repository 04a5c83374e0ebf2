package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/utxostore/utxostore/chain"
)

// TestServeFollowsPeerIntoTheBlockStore: serve --peer --index keeps the
// followed blocks in the block store, and the Blockbook API serves a
// followed block with its transactions. A --block-retention below
// --rollback-window, which would prune blocks a reorganisation
// disconnects, is refused with a message that says so.
func TestServeFollowsPeerIntoTheBlockStore(t *testing.T) {
	_, node := minedNode(t, "block store", 5)
	data := t.TempDir()

	_, stderr, err := run(t, "serve", "--create", "--index", "--block-retention", "5", "--rollback-window", "6", "--network", "simnet", "--data", data,
		"--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--peer", node.P2P)
	if err == nil {
		t.Fatal("serve --peer with a --block-retention below --rollback-window started")
	}
	mustContain(t, "the refusal", stderr, "--block-retention 5 is below --rollback-window 6")

	d := startDaemon(t, "serve", "--create", "--index", "--network", "simnet", "--data", data,
		"--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--peer", node.P2P, "--ready-max-behind", "0")
	waitServedTip(t, d, node)
	hash, height := node.Tip(t)
	block, _ := node.Block(t, &hash)
	if len(block.Transactions) < 2 {
		t.Fatalf("block %d holds %d transactions; the test wants more than its coinbase", height, len(block.Transactions))
	}
	code, body := httpGet(t, fmt.Sprintf("http://%s/api/v2/block/%d", d.http, height))
	if code != http.StatusOK {
		t.Fatalf("GET /api/v2/block/%d answers %d %s", height, code, body)
	}
	for _, tx := range block.Transactions {
		mustContain(t, "the followed block", body, `"txid": "`+tx.TxHash().String()+`"`)
	}
	if err := d.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("the daemon did not stop cleanly: %v\n%s", err, d.log())
	}
}

// TestSyncKeepsBlocksAsTheNetworksBlockFiles: the block store's segments
// are blk*.dat files of the store's network, also when sync opens the
// store on its own network (no --network): import reads the segment back
// into the synced store's UTXO set, and refuses it for another network.
func TestSyncKeepsBlocksAsTheNetworksBlockFiles(t *testing.T) {
	_, node := minedNode(t, "block files", 3)
	data := t.TempDir()
	lastLine(t, "sync", "--quiet", "--stop-at-tip", "--index", "--network", "simnet", "--data", data, "--peer", node.P2P)
	node.Generate(t, 2)
	synced := parseSummary(t, lastLine(t, "sync", "--quiet", "--stop-at-tip", "--index", "--data", data, "--peer", node.P2P))

	segment := filepath.Join(data, "blocks", "blk00000.dat")
	head := make([]byte, 4)
	f, err := os.Open(segment)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadFull(f, head)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := chain.Magic(head); got != chain.MagicSimnet {
		t.Fatalf("%s starts with magic %s (%s), want simnet's %s", segment, got, got.Network(), chain.MagicSimnet)
	}
	imported := parseSummary(t, lastLine(t, "import", "--quiet", "--network", "simnet", "--sync", "block", "--data", t.TempDir(), segment))
	if imported != synced {
		t.Fatalf("import of the block store's segment:\n got %+v\nwant %+v (the synced store)", imported, synced)
	}
	_, stderr, err := run(t, "import", "--quiet", "--network", "regtest", "--data", t.TempDir(), segment)
	if err == nil {
		t.Fatal("import of a simnet block file into a regtest store succeeded")
	}
	mustContain(t, "the refusal", stderr, "simnet's, not regtest's")
}
