package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
	"github.com/gorilla/websocket"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/client"
	"github.com/utxostore/utxostore/internal/btcdtest"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// minedNode starts a btcd node mining to a new wallet's key, with the
// wallet's coins mature and then blocks of mineWithTxs.
func minedNode(t *testing.T, name string, blocks int) (*btcdtest.Wallet, *btcdtest.Node) {
	t.Helper()
	w := btcdtest.NewWallet(t, name)
	node := btcdtest.Start(t, w.Addr)
	matureCoins(t, node, w)
	mineWithTxs(t, node, w, blocks)
	return w, node
}

// matureCoins mines the block after genesis (which pays nobody) and 100
// blocks paying the wallet, so that the wallet's first coinbase can be
// spent in the next block.
func matureCoins(t *testing.T, node *btcdtest.Node, w *btcdtest.Wallet) {
	t.Helper()
	node.Generate(t, 1)
	for range 100 {
		mineOne(t, node, w)
	}
}

// mineWithTxs mines blocks on node, each holding a few of the wallet's
// transactions when it has mature coins: one to three inputs into one to
// four outputs, so the chain has spends of coinbases, of fresh outputs and
// of several outputs at once.
func mineWithTxs(t *testing.T, node *btcdtest.Node, w *btcdtest.Wallet, blocks int) {
	t.Helper()
	for i := range blocks {
		_, tip := node.Tip(t)
		for j := range 1 + i%3 {
			coins := w.Take(tip, 1+(i+j)%3)
			if len(coins) == 0 {
				break
			}
			node.Send(t, w.Pay(t, coins, 1+(i*j)%4, 10_000))
		}
		mineOne(t, node, w)
	}
}

// mineOne mines one block and shows it to the wallet.
func mineOne(t *testing.T, node *btcdtest.Node, w *btcdtest.Wallet) *wire.MsgBlock {
	t.Helper()
	hash := node.Generate(t, 1)[0]
	b, _ := node.Block(t, hash)
	_, height := node.Tip(t)
	w.AddBlock(b, height)
	return b
}

// importedSummary imports the node's best chain, fetched from it as raw
// block files, into a fresh store and returns the summary line.
func importedSummary(t *testing.T, node *btcdtest.Node, blockDir string) utxo.Summary {
	t.Helper()
	files := node.WriteChain(t, blockDir)
	line := lastLine(t, append([]string{"import", "--quiet", "--network", node.Kind.Network, "--sync", "block", "--data", t.TempDir()}, files...)...)
	return parseSummary(t, line)
}

func parseSummary(t *testing.T, line string) utxo.Summary {
	t.Helper()
	var s utxo.Summary
	if err := json.Unmarshal([]byte(line), &s); err != nil {
		t.Fatalf("summary line %q: %v", line, err)
	}
	return s
}

// killMidSync starts sync and SIGKILLs it after its first progress line:
// blocks are connected, more are in flight.
func killMidSync(t *testing.T, args ...string) {
	t.Helper()
	killAfterProgress(t, "synced height", 1, args...)
}

// TestSyncFromBtcd follows a real btcd from genesis over 500 blocks with
// transactions, killing sync -9 during catch-up ten times (each time more
// blocks were mined); each restart resumes from the store's tip and ends
// at the node's tip with the UTXO digest of a fresh import of the node's
// chain, and the address index of import --index. With -long: 1,100
// blocks first, then thirty kills, 50 more blocks each time.
func TestSyncFromBtcd(t *testing.T) {
	first, rounds, more := 420, 10, 40
	if *long {
		first, rounds, more = 1000, 30, 50
	}
	w, node := minedNode(t, "sync", first)

	data, blockDir := t.TempDir(), t.TempDir()
	syncArgs := []string{"sync", "--index", "--network", "simnet", "--data", data, "--peer", node.P2P}
	for round := range rounds {
		if round > 0 {
			mineWithTxs(t, node, w, more)
		}
		killMidSync(t, append(syncArgs, "--progress-blocks", "5")...)
		got := parseSummary(t, lastLine(t, append(syncArgs, "--quiet", "--stop-at-tip")...))
		hash, height := node.Tip(t)
		want := importedSummary(t, node, blockDir)
		if got != want {
			t.Fatalf("round %d: after sync to the node's tip %s at height %d:\n got %+v\nwant %+v (import of the node's chain)", round, hash, height, got, want)
		}
		t.Logf("round %d: %+v", round, got)
		if got, want := indexBalance(t, data, w.PkScript), importedBalance(t, node, blockDir, w.PkScript); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: %s", round, describeBalances(got, want))
		}
		if want.Height != uint32(height) || want.Txs <= want.Blocks {
			t.Fatalf("round %d: the import ends at height %d with %d txs in %d blocks; the node is at %d", round, want.Height, want.Txs, want.Blocks, height)
		}
	}
}

// wsAnswer is a Blockbook websocket answer to sendTransaction.
type wsAnswer struct {
	ID   string `json:"id"`
	Data struct {
		Result string `json:"result"`
		Error  struct {
			Message string `json:"message"`
		} `json:"error"`
	} `json:"data"`
}

// wsSendTransaction sends hexTx with Blockbook's websocket
// sendTransaction and returns its answer, skipping the block pushes.
func wsSendTransaction(t *testing.T, ws *websocket.Conn, hexTx string) wsAnswer {
	t.Helper()
	if err := ws.WriteJSON(map[string]any{"id": "send", "method": "sendTransaction", "params": map[string]string{"hex": hexTx}}); err != nil {
		t.Fatal(err)
	}
	for {
		var a wsAnswer
		if err := ws.ReadJSON(&a); err != nil {
			t.Fatalf("waiting for the answer to sendTransaction: %v", err)
		}
		if a.ID == "send" {
			return a
		}
	}
}

// TestServeFollowsPeer runs the daemon with --peer: it is not ready until
// the peer has told its chain and the store is within --ready-max-behind
// of it, then follows the blocks mined at the tip and serves them, with
// the follower's metrics beside the store's; /api/v2/sendtx, gRPC SendTx
// and the websocket's sendTransaction relay a transaction to the node and
// refuse a double spend.
func TestServeFollowsPeer(t *testing.T) {
	w, node := minedNode(t, "serve", 5)

	nowhere := startDaemon(t, "serve", "--create", "--network", "simnet", "--data", t.TempDir(), "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--peer", "127.0.0.1:1")
	if code, body := httpGet(t, "http://"+nowhere.http+"/health/ready"); code != http.StatusServiceUnavailable {
		t.Errorf("following a peer that cannot be reached, /health/ready answers %d %s", code, body)
	}

	d := startDaemon(t, "serve", "--create", "--network", "simnet", "--data", t.TempDir(), "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--peer", node.P2P, "--ready-max-behind", "0")
	waitServedTip(t, d, node)
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+d.http+"/websocket", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.WriteJSON(map[string]any{"id": "blocks", "method": "subscribeNewBlock", "params": map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	node.Generate(t, 3)
	waitServedTip(t, d, node)
	_, tip := node.Tip(t)
	// The blocks the follower connects reach the websocket's subscribers.
	if err := ws.SetReadDeadline(time.Now().Add(60 * time.Second)); err != nil {
		t.Fatal(err)
	}
	for pushed := map[int32]bool{}; len(pushed) < 3; {
		var msg struct {
			ID   string `json:"id"`
			Data struct {
				Height int32  `json:"height"`
				Hash   string `json:"hash"`
			} `json:"data"`
		}
		if err := ws.ReadJSON(&msg); err != nil {
			t.Fatalf("waiting for the pushes of blocks %d to %d (got %v): %v", tip-2, tip, pushed, err)
		}
		if msg.ID == "blocks" && msg.Data.Height > tip-3 && msg.Data.Hash != "" {
			pushed[msg.Data.Height] = true
		}
	}
	coins := w.Take(tip, 1)
	relayed := w.Pay(t, coins, 2, 10_000)
	if code, body := httpGet(t, "http://"+nowhere.http+"/api/v2/sendtx/"+txHex(t, relayed)); code != http.StatusServiceUnavailable || !strings.Contains(body, "not connected") {
		t.Errorf("sendtx to a daemon not connected to its peer answers %d %s", code, body)
	}
	code, body := httpGet(t, "http://"+d.http+"/api/v2/sendtx/"+txHex(t, relayed))
	if code != http.StatusOK || !strings.Contains(body, relayed.TxHash().String()) {
		t.Fatalf("sendtx answers %d %s", code, body)
	}
	waitInMempool(t, node, relayed.TxHash())
	_, body = httpGet(t, "http://"+d.http+"/api/v2/tx/"+relayed.TxHash().String())
	mustContain(t, "the relayed transaction", body, `"blockHeight": -1`)
	doubleSpend := w.Pay(t, coins, 1, 10_000)
	if code, body := httpGet(t, "http://"+d.http+"/api/v2/sendtx/"+txHex(t, doubleSpend)); code != http.StatusBadRequest || !strings.Contains(body, "SPENT") {
		t.Errorf("sendtx of a double spend answers %d %s", code, body)
	}

	grpcRelayed := w.Pay(t, w.Take(tip, 1), 2, 10_000)
	c, err := client.Dial(d.grpc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if txid, err := c.SendTx(context.Background(), txBytes(t, grpcRelayed)); err != nil || txid != grpcRelayed.TxHash() {
		t.Fatalf("gRPC SendTx: %s, %v", txid, err)
	}
	waitInMempool(t, node, grpcRelayed.TxHash())
	doubleSpend = w.Pay(t, coins, 3, 10_000)
	if _, err := c.SendTx(context.Background(), txBytes(t, doubleSpend)); !errors.Is(err, model.ErrSpent) {
		t.Errorf("gRPC SendTx of a double spend: %v", err)
	}

	// Blockbook's websocket sendTransaction relays too, as Trezor Suite
	// broadcasts.
	wsRelayed := w.Pay(t, w.Take(tip, 1), 2, 10_000)
	if answer := wsSendTransaction(t, ws, txHex(t, wsRelayed)); answer.Data.Result != wsRelayed.TxHash().String() {
		t.Fatalf("websocket sendTransaction answers %+v", answer.Data)
	}
	waitInMempool(t, node, wsRelayed.TxHash())
	doubleSpend = w.Pay(t, coins, 4, 10_000)
	if answer := wsSendTransaction(t, ws, txHex(t, doubleSpend)); !strings.Contains(answer.Data.Error.Message, "SPENT") {
		t.Errorf("websocket sendTransaction of a double spend answers %+v", answer.Data)
	}

	_, height := node.Tip(t)
	_, metrics := httpGet(t, "http://"+d.http+"/metrics")
	mustContain(t, "metrics", metrics,
		fmt.Sprintf("utxostore_follow_peer_height %d", height),
		fmt.Sprintf("utxostore_follow_store_height %d", height),
		"utxostore_follow_blocks_behind 0",
		"utxostore_follow_reorgs_total 0")
	if err := d.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("the daemon did not stop cleanly: %v\n%s", err, d.log())
	}
}

// TestSyncRestartOffThePeersChain syncs a store from node A, then points
// sync at node B, whose chain forked from A's five blocks below A's tip and
// has more chain work (seven blocks at the same difficulty): the store is
// reorganised back to the fork point and onto B's chain, the transactions
// of A's five blocks returning to unmined, holding their inputs (the
// summary of a fresh import of B's chain that was then sent them). A store
// forked from the peer deeper than --rollback-window is refused, with a
// message that says so, and left as it was.
func TestSyncRestartOffThePeersChain(t *testing.T) {
	w := btcdtest.NewWallet(t, "restart off chain")
	a := btcdtest.Start(t, w.Addr)
	b := btcdtest.Start(t, w.Addr)
	matureCoins(t, a, w)
	mineWithTxs(t, a, w, 10)
	b.Connect(t, a)
	waitSameTip(t, a, b)
	b.Disconnect(t, a)
	mineWithTxs(t, a, w, 5)
	var forked []*wire.MsgBlock // A's five blocks that B's chain lacks, in order
	for hash, _ := a.Tip(t); len(forked) < 5; {
		block, _ := a.Block(t, &hash)
		forked = append([]*wire.MsgBlock{block}, forked...)
		hash = block.Header.PrevBlock
	}
	b.Generate(t, 7)

	data := t.TempDir()
	onA := parseSummary(t, lastLine(t, "sync", "--quiet", "--stop-at-tip", "--network", "simnet", "--data", data, "--peer", a.P2P))
	if hash, height := a.Tip(t); onA.Height != uint32(height) {
		t.Fatalf("sync from A ends at height %d, A's tip is %s at %d", onA.Height, hash, height)
	}

	// The store opens on its own network: no --network.
	_, stderr, err := run(t, "sync", "--quiet", "--stop-at-tip", "--rollback-window", "4", "--data", data, "--peer", b.P2P)
	if err == nil {
		t.Fatal("sync onto a chain forked 5 blocks back succeeded with a rollback window of 4")
	}
	mustContain(t, "the refusal", stderr, "past the rollback window of 4 blocks", "forks from it at height")
	if unchanged := parseSummary(t, lastLine(t, "info", "--network", "simnet", "--data", data)); unchanged != onA {
		t.Fatalf("the refused sync changed the store:\n got %+v\nwant %+v", unchanged, onA)
	}

	onB := parseSummary(t, lastLine(t, "sync", "--quiet", "--stop-at-tip", "--network", "simnet", "--data", data, "--peer", b.P2P))
	imported := t.TempDir()
	lastLine(t, append([]string{"import", "--quiet", "--network", "simnet", "--sync", "block", "--data", imported}, b.WriteChain(t, t.TempDir())...)...)
	ctx := context.Background()
	store, err := (&storeFlags{data: imported}).open(ctx, existingStore)
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range forked {
		for _, msg := range block.Transactions[1:] {
			tx := chain.NewTx(msg)
			if _, err := store.Spend(ctx, tx); err != nil {
				t.Fatalf("sending %s of A's chain to the import of B's: %v", tx.ID, err)
			}
			if _, err := store.Create(ctx, tx, store.GetBlockHeight()+1); err != nil {
				t.Fatal(err)
			}
		}
	}
	want, err := store.Summary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	if onB != want {
		t.Fatalf("after sync from B:\n got %+v\nwant %+v (import of B's chain, sent A's transactions unmined)", onB, want)
	}
}

// waitServedTip waits until the daemon serves the node's best block and is
// ready.
func waitServedTip(t *testing.T, d *daemon, node *btcdtest.Node) {
	t.Helper()
	hash, height := node.Tip(t)
	btcdtest.WaitFor(t, 60*time.Second, fmt.Sprintf("the daemon to serve block %s at height %d", hash, height), func() (bool, string) {
		code, body := httpGet(t, fmt.Sprintf("http://%s/api/v2/block/%d", d.http, height))
		if code != http.StatusOK || !strings.Contains(body, hash.String()) {
			return false, body
		}
		code, body = httpGet(t, "http://"+d.http+"/health/ready")
		return code == http.StatusOK, body
	})
}

func txHex(t *testing.T, tx *wire.MsgTx) string {
	t.Helper()
	return hex.EncodeToString(txBytes(t, tx))
}

func txBytes(t *testing.T, tx *wire.MsgTx) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := tx.Serialize(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// waitInMempool waits until the node's mempool holds txid.
func waitInMempool(t *testing.T, node *btcdtest.Node, txid chainhash.Hash) {
	t.Helper()
	btcdtest.WaitFor(t, 60*time.Second, "the node to have the relayed transaction", func() (bool, string) {
		pool, err := node.RPC.GetRawMempool()
		for _, h := range pool {
			if *h == txid {
				return true, ""
			}
		}
		return false, fmt.Sprintf("mempool %v, %v", pool, err)
	})
}

// TestSyncIndexCatchesUp turns --index on for a store that sync filled
// without it: the address index is built up to the store's tip from the
// kept blocks (as after a crash between the store's write and the
// index's), equal to import --index's; when the blocks it lacks are no
// longer kept, sync asks the node for them, and the index is the same.
func TestSyncIndexCatchesUp(t *testing.T) {
	w, node := minedNode(t, "index catch-up", 10)
	kept, pruned := t.TempDir(), t.TempDir()
	for _, data := range []string{kept, pruned} {
		window := map[string]string{kept: "1000", pruned: "100"}[data]
		lastLine(t, "sync", "--quiet", "--stop-at-tip", "--rollback-window", window, "--network", "simnet", "--data", data, "--peer", node.P2P)
	}
	want := importedBalance(t, node, t.TempDir(), w.PkScript)
	for _, data := range []string{kept, pruned} {
		lastLine(t, "sync", "--quiet", "--stop-at-tip", "--index", "--rollback-window", "100", "--network", "simnet", "--data", data, "--peer", node.P2P)
		if got := indexBalance(t, data, w.PkScript); !reflect.DeepEqual(got, want) {
			t.Fatal(describeBalances(got, want))
		}
	}
}
