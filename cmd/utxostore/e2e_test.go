package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/client"
	"github.com/utxostore/utxostore/internal/testdata"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// Known transactions of the first 14,132 mainnet blocks.
const (
	genesisCoinbase = "4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b"
	// block 170: the first payment, spending block 9's coinbase; its
	// change (vout 1) is spent by block 181's first transaction, its
	// payment (vout 0) is still unspent at height 14131.
	block170Tx = "f4184fc596403b9d638783cf57adfe4c75c605f6356fbc91338530e9831e9e16"
	block181Tx = "a16f3ce4dd5deb92d98ef5cf8afeaf0775ebca408f708b2146c4fb42b41e14be"
	// block 9's coinbase, fully spent at 170, is deleted at 170+288 (DAH).
	block9Coinbase = "0437cd7f8525ceed2324359c2d0ba26006d92d856a9c20fa0241106ee5a597c9"
)

// TestServeImportQueryRestart imports the real chain into a running daemon
// (which created its store, --create) over gRPC, checks spent and unspent
// outputs over HTTP and gRPC, scrapes the metrics, SIGKILLs the daemon and
// checks a restart, opening the store it finds, gives the same answers.
func TestServeImportQueryRestart(t *testing.T) {
	blk := testdata.Path(t, "btc-mainnet-0-14131.blk")
	data := t.TempDir()
	// --sync=block: durable at block boundaries, the mode meant for bulk
	// import; with --sync=always the 14,132 blocks take ~100 s on this
	// machine, over the test budget. The kill below comes after import, so
	// every block is checkpointed.
	serveArgs := []string{"serve", "--data", data, "--sync", "block", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"}
	d := startDaemon(t, append(serveArgs, "--create")...)
	if got := lastLine(t, "client", "--server", d.grpc, "--quiet", "import", blk); got != btcChainSummary {
		t.Fatalf("import over gRPC:\n%s\nwant\n%s", got, btcChainSummary)
	}
	var imported utxo.Summary
	if err := json.Unmarshal([]byte(btcChainSummary), &imported); err != nil {
		t.Fatal(err)
	}
	status := checkAnswers(t, d, imported.Digest)
	_, metrics := httpGet(t, "http://"+d.http+"/metrics")
	mustContain(t, "/metrics", metrics,
		`utxo_operations_total{op="ConnectBlock",outcome="ok"} 14132`,
		`utxo_operations_total{op="Get",outcome="ok"}`,
		`utxo_operation_duration_seconds_bucket{op="ConnectBlock"`,
		`utxo_create_batch_size_count 14132`,
		`utxo_create_external`,
		`utxo_store_errors{code="TX_NOT_FOUND"}`)

	if err := d.stop(t, syscall.SIGKILL); err == nil {
		t.Fatal("SIGKILL: want a killed process")
	}
	d = startDaemon(t, serveArgs...)
	if again := checkAnswers(t, d, imported.Digest); again != status {
		t.Errorf("after SIGKILL and restart the status differs:\nbefore %s\nafter  %s", status, again)
	}
	if err := d.stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("SIGTERM: want a clean exit, got %v:\n%s", err, d.log())
	}
}

// checkAnswers queries the imported chain, whose summary has digest, and
// returns the store's counts.
func checkAnswers(t *testing.T, d *daemon, digest string) string {
	t.Helper()
	base := "http://" + d.http
	code, body := httpGet(t, base+"/api/v2/tx/"+genesisCoinbase)
	if code != 200 {
		t.Fatalf("genesis coinbase: %d %s", code, body)
	}
	var tx struct {
		Vout []struct {
			State   string `json:"state"`
			SpentBy string `json:"spentBy"`
		} `json:"vout"`
		BlockHeight int64 `json:"blockHeight"`
	}
	json.Unmarshal([]byte(body), &tx)
	if len(tx.Vout) != 1 || tx.Vout[0].State != "unspent" || tx.BlockHeight != 0 {
		t.Errorf("genesis coinbase: want one unspent output at height 0, got %s", body)
	}
	_, body = httpGet(t, base+"/api/v2/tx/"+block170Tx)
	tx.Vout = nil
	json.Unmarshal([]byte(body), &tx)
	if len(tx.Vout) != 2 || tx.Vout[0].State != "unspent" || tx.Vout[1].State != "spent" || tx.Vout[1].SpentBy != block181Tx+":0" || tx.BlockHeight != 170 {
		t.Errorf("block 170's transaction: want vout 0 unspent, vout 1 spent by %s:0, got %s", block181Tx, body)
	}
	// Blockbook answers a transaction it does not know with 400.
	if code, body := httpGet(t, base+"/api/v2/tx/"+block9Coinbase); code != 400 || !strings.Contains(body, "not found") {
		t.Errorf("block 9's coinbase, deleted 288 blocks after its last spend: want 400 not found, got %d %s", code, body)
	}
	if code, body := httpGet(t, base+"/api/v2/block/170"); code != 200 {
		t.Errorf("block 170: %d %s", code, body)
	} else {
		mustContain(t, "block 170", body, `"hash": "00000000d1145790a8694403d4063f323d499e655c83426834d4ce2f8dd4a2ee"`, `"txCount": 2`,
			`"merkleRoot": "7dac2c5666815c17a3b36427de37bb9d2e2c5ccec3f8633eb91a4205cb4c10ff"`, `"time": 1231731025`,
			`"nonce": "1889418792"`, `"bits": "1d00ffff"`, `"size": 490`)
	}
	mustContain(t, "/health/ready", func() string { _, b := httpGet(t, base+"/health/ready"); return b }(), "ready")

	c, err := client.Dial(d.grpc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	txid, _ := chainhash.NewHashFromStr(block170Tx)
	for vout, want := range []utxo.OutputStatus{utxo.StatusUnspent, utxo.StatusSpent} {
		resp, err := c.GetSpend(ctx, &utxo.Spend{TxID: *txid, Vout: uint32(vout)})
		if err != nil || resp.Status != want {
			t.Errorf("gRPC GetSpend %s:%d: want %v, got %+v, %v", block170Tx, vout, want, resp, err)
		}
	}
	gone, _ := chainhash.NewHashFromStr(block9Coinbase)
	if _, err := c.Get(ctx, *gone); !errors.Is(err, model.ErrTxNotFound) {
		t.Errorf("gRPC Get of a deleted transaction: want TX_NOT_FOUND, got %v", err)
	}

	_, body = httpGet(t, base+"/api/status?summary=true")
	var st struct {
		Utxostore struct {
			Height uint32 `json:"height"`
			Blocks uint64 `json:"blocks"`
			Digest string `json:"digest"`
		} `json:"utxostore"`
	}
	json.Unmarshal([]byte(body), &st)
	if st.Utxostore.Height != 14131 || st.Utxostore.Blocks != 14132 || st.Utxostore.Digest != digest {
		t.Errorf("/api/status?summary=true: want height 14131, 14132 blocks and the import's digest %s, got %s", digest, body)
	}
	return body
}
