package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/utxostore/utxostore/server"
	"github.com/utxostore/utxostore/utxo"
)

// statusReply is the part of /api/status the tests read; the summary's
// fields are pointers, nil when absent.
type statusReply struct {
	Blockbook struct {
		BestHeight uint32 `json:"bestHeight"`
	} `json:"blockbook"`
	Backend struct {
		BestBlockHash string `json:"bestBlockHash"`
	} `json:"backend"`
	Utxostore struct {
		Height   uint32  `json:"height"`
		Blocks   uint64  `json:"blocks"`
		Txs      uint64  `json:"txs"`
		Utxos    *uint64 `json:"utxos"`
		Satoshis *uint64 `json:"satoshis"`
		Digest   *string `json:"digest"`
		// Core's statistics, always there.
		TxOuts      uint64 `json:"txouts"`
		TotalAmount uint64 `json:"total_amount"`
		MuHash      string `json:"muhash"`
	} `json:"utxostore"`
}

// getStatus fetches url, expects HTTP 200 and decodes the status.
func getStatus(t *testing.T, url string) statusReply {
	t.Helper()
	var st statusReply
	getJSON(t, url, &st)
	return st
}

// TestStatusWalksTheStoreOnlyWhenAsked polls /api/status over a store of
// real blocks as monitoring does: the answer names the tip and the chain's
// counts without calling Summary, also after a new block, and has no
// summary fields; ?summary=true adds the UTXO set's count, value and
// digest, those Summary gives.
func TestStatusWalksTheStoreOnlyWhenAsked(t *testing.T) {
	blocks := server.MainnetBlocks(t, 121)
	ctx := context.Background()
	db := newStore(t, utxo.Options{})
	var txs uint64
	connect := func(b utxo.Block) {
		t.Helper()
		if err := db.ConnectBlock(ctx, b); err != nil {
			t.Fatal(err)
		}
		txs += uint64(len(b.Txs))
	}
	for _, b := range blocks[:120] {
		connect(b)
	}
	srv, _ := serveForTest(t, db, server.Options{})
	base := "http://" + srv.HTTPAddr()

	checkChain := func(st statusReply, tip utxo.Block) {
		t.Helper()
		u := st.Utxostore
		if st.Blockbook.BestHeight != tip.Height || st.Backend.BestBlockHash != tip.Hash.String() || u.Height != tip.Height ||
			u.Blocks != uint64(tip.Height)+1 || u.Txs != txs {
			t.Fatalf("status: want tip %s at %d, %d blocks, %d txs; got %+v", tip.Hash, tip.Height, tip.Height+1, txs, st)
		}
	}
	checkNoSummary := func(st statusReply) {
		t.Helper()
		if u := st.Utxostore; u.Utxos != nil || u.Satoshis != nil || u.Digest != nil {
			t.Fatalf("status without ?summary=true has summary fields: utxos %v satoshis %v digest %v", u.Utxos != nil, u.Satoshis != nil, u.Digest != nil)
		}
	}
	for _, url := range []string{base + "/api/status", base + "/api/status?summary=false", base + "/api/v2"} {
		st := getStatus(t, url)
		checkChain(st, blocks[119])
		checkNoSummary(st)
	}
	if n := operations(t, base, "Summary"); n != 0 {
		t.Fatalf("the status without ?summary=true walked the store: %d Summary calls", n)
	}

	st := getStatus(t, base+"/api/status?summary=true")
	checkChain(st, blocks[119])
	want, err := db.Summary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if u := st.Utxostore; u.Utxos == nil || *u.Utxos != want.Utxos || u.Satoshis == nil || *u.Satoshis != want.Satoshis ||
		u.Digest == nil || *u.Digest != want.Digest {
		t.Fatalf("status with ?summary=true: utxos %v satoshis %v digest %v, want Summary's %+v", u.Utxos, u.Satoshis, u.Digest, want)
	}
	if n := operations(t, base, "Summary"); n != 1 {
		t.Fatalf("one status with ?summary=true made %d Summary calls", n)
	}

	// A new block changes the store: a status without the parameter still
	// reads the chain state only.
	connect(blocks[120])
	st = getStatus(t, base+"/api/status")
	checkChain(st, blocks[120])
	checkNoSummary(st)
	// Core's statistics come without a walk: those the chain state keeps.
	stats, err := db.SetStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if u := st.Utxostore; u.TxOuts != stats.TxOuts || u.TotalAmount != stats.TotalAmount || u.MuHash != stats.MuHash || u.TxOuts != 120 {
		t.Fatalf("status: txouts %d total_amount %d muhash %s, want the chain state's %+v (120 coinbases past genesis)", u.TxOuts, u.TotalAmount, u.MuHash, stats)
	}
	if n := operations(t, base, "Summary"); n != 1 {
		t.Fatalf("a status without ?summary=true after a new block walked the store: %d Summary calls, want the 1 asked for", n)
	}
}

// TestStatusSummaryParameter: an empty store's summary is there, as zeros,
// when asked for; a value of the parameter that is neither true nor false
// is refused with a message that says which are.
func TestStatusSummaryParameter(t *testing.T) {
	srv, _ := serveForTest(t, newStore(t, utxo.Options{}), server.Options{})
	base := "http://" + srv.HTTPAddr()
	st := getStatus(t, base+"/api/status?summary=1")
	if u := st.Utxostore; u.Utxos == nil || *u.Utxos != 0 || u.Satoshis == nil || *u.Satoshis != 0 || u.Digest == nil || *u.Digest == "" {
		t.Fatalf("an empty store's summary: utxos %v satoshis %v digest %v, want 0, 0 and the digest of nothing", u.Utxos, u.Satoshis, u.Digest)
	}
	for _, value := range []string{"maybe", ""} {
		resp, err := http.Get(base + "/api/status?summary=" + value)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error string `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || err != nil || !strings.Contains(body.Error, `summary="`+value+`"`) ||
			!strings.Contains(body.Error, "summary=true") {
			t.Fatalf("?summary=%s: HTTP %d %q (%v), want 400 naming the value and summary=true", value, resp.StatusCode, body.Error, err)
		}
	}
	if n := operations(t, base, "Summary"); n != 1 {
		t.Fatalf("%d Summary calls, want the 1 asked for", n)
	}
}

// TestStatusSummaryFollowsWritesBesideTheDaemon: the store changes through
// the same process but not through the daemon's API, as when sync's
// follower stores the mempool, and the tip stays: ?summary=true then gives
// the summary of the store as it is now, not the one cached before.
func TestStatusSummaryFollowsWritesBesideTheDaemon(t *testing.T) {
	blocks := server.MainnetBlocks(t, 120)
	ctx := context.Background()
	db := newStore(t, utxo.Options{})
	for _, b := range blocks {
		if err := db.ConnectBlock(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	srv, _ := serveForTest(t, db, server.Options{})
	url := "http://" + srv.HTTPAddr() + "/api/status?summary=true"
	before := getStatus(t, url)

	if err := db.Delete(ctx, blocks[119].Txs[0].ID); err != nil {
		t.Fatal(err)
	}
	want, err := db.Summary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if before.Utxostore.Digest == nil || *before.Utxostore.Digest == want.Digest {
		t.Fatal("deleting the tip's coinbase did not change the digest: the test proves nothing")
	}
	after := getStatus(t, url)
	if u := after.Utxostore; u.Digest == nil || *u.Digest != want.Digest || *u.Utxos != want.Utxos {
		t.Fatalf("status after a write beside the daemon: digest %v, utxos %v; want %s and %d", *u.Digest, *u.Utxos, want.Digest, want.Utxos)
	}
}
