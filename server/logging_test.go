package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/server"
	"github.com/utxostore/utxostore/utxo"
)

// syncBuffer is a log destination the daemon's goroutines write while the
// test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records decodes the JSON lines written so far.
func (b *syncBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, rec)
	}
	return out
}

// TestServerFaultsAreLogged closes the store under a running daemon, so
// that reads fail inside it, and checks that each failure answered is
// logged with its gRPC method or its HTTP method and route, while the
// caller's own mistakes are not.
func TestServerFaultsAreLogged(t *testing.T) {
	var logged syncBuffer
	db := newStore(t, utxo.Options{})
	srv, c := serveForTest(t, db, server.Options{Logger: slog.New(slog.NewJSONHandler(&logged, nil))})
	ctx := context.Background()

	// A transaction that is not there, and a malformed txid, are the
	// caller's answers: nothing to log.
	if _, err := c.Get(ctx, chainhash.Hash{1}); status.Code(err) != codes.NotFound {
		t.Fatalf("get of a missing transaction: %v", err)
	}
	resp, err := http.Get("http://" + srv.HTTPAddr() + "/api/v2/tx/nothex")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("malformed txid: HTTP %d", resp.StatusCode)
	}
	if recs := logged.records(t); len(recs) != 0 {
		t.Fatalf("the caller's mistakes were logged: %v", recs)
	}

	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, chainhash.Hash{1}); status.Code(err) != codes.Internal {
		t.Fatalf("get from a closed store: %v, want Internal", err)
	}
	it, err := c.GetUnminedTxIterator(ctx)
	if err == nil {
		_, err = it.Next(ctx) // the stream's answer comes with its first item
	}
	if status.Code(err) != codes.Internal {
		t.Fatalf("unmined stream from a closed store: %v, want Internal", err)
	}
	resp, err = http.Get("http://" + srv.HTTPAddr() + "/api/v2/tx/" + chainhash.Hash{1}.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("tx from a closed store: HTTP %d, want 500", resp.StatusCode)
	}

	want := []map[string]any{
		{"grpc_method": "/utxostore.v1.UtxoStore/Get", "code": "Internal"},
		{"grpc_method": "/utxostore.v1.UtxoStore/GetUnminedTxs", "code": "Internal"},
		{"method": "GET", "route": "GET /api/v2/tx/{txid}", "status": float64(500),
			"error": "reading transaction " + chainhash.Hash{1}.String() + ": STORAGE_ERROR: reading records: engine: closed"},
	}
	recs := logged.records(t)
	for _, w := range want {
		if !anyMatches(recs, w) {
			t.Errorf("no ERROR record with %v among %v", w, recs)
		}
	}
}

// anyMatches reports whether one ERROR record with an error message holds
// every field of want.
func anyMatches(recs []map[string]any, want map[string]any) bool {
	for _, rec := range recs {
		ok := rec["level"] == "ERROR" && rec["error"] != ""
		for k, v := range want {
			ok = ok && rec[k] == v
		}
		if ok {
			return true
		}
	}
	return false
}

// TestBlockReadFaultsAnswer500: when the store fails to read a block's
// metadata, the handlers that add block fields to their answer (a mined
// transaction's block hash, a block's next block) answer 500 and log it,
// never a 200 without those fields.
func TestBlockReadFaultsAnswer500(t *testing.T) {
	ctx := context.Background()
	eng := memory.New()
	db, err := utxo.Open(ctx, eng, utxo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	blocks := server.MainnetBlocks(t, 3)
	for _, b := range blocks {
		if err := db.ConnectBlock(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	var logged syncBuffer
	srv, _ := serveForTest(t, db, server.Options{Logger: slog.New(slog.NewJSONHandler(&logged, nil))})
	base := "http://" + srv.HTTPAddr()
	minedInBlock1 := base + "/api/v2/tx/" + blocks[1].Txs[0].ID.String()
	urls := []string{minedInBlock1, base + "/api/v2/block/0"}
	for _, url := range urls {
		if code := getCode(t, url); code != http.StatusOK {
			t.Fatalf("%s over an intact store: HTTP %d", url, code)
		}
	}
	// The store keeps each block's metadata under "block/HEIGHT" (package
	// utxo, chainstate.go); a value that does not decode is a damaged one.
	if err := eng.PutMeta(ctx, "block/0000000001", []byte("{")); err != nil {
		t.Fatal(err)
	}
	for _, url := range urls {
		if code := getCode(t, url); code != http.StatusInternalServerError {
			t.Errorf("%s with block 1's metadata damaged: HTTP %d, want 500", url, code)
		}
	}
	recs := logged.records(t)
	for _, route := range []string{"GET /api/v2/tx/{txid}", "GET /api/v2/block/{height}"} {
		if !anyMatches(recs, map[string]any{"route": route, "status": float64(500)}) {
			t.Errorf("no ERROR record for %s among %v", route, recs)
		}
	}
}

// getCode is the status code of a GET.
func getCode(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
