package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/utxostore/utxostore/server"
)

// blockbookRoutes are the Blockbook API's GET routes that take an
// argument in their path.
var blockbookRoutes = []string{"block-index", "tx", "tx-specific", "block", "address", "xpub", "utxo", "balancehistory", "estimatefee", "sendtx"}

// FuzzBlockbookAPI: whatever path argument and query a client sends a
// route of the Blockbook API, the daemon answers with JSON, and with a
// server error (5xx) only where the request needs what the daemon lacks
// (sendtx, with no node to relay to). A malformed or out-of-range value
// is the client's error (4xx), said in the body.
func FuzzBlockbookAPI(f *testing.F) {
	srv, blocks := indexedDaemon(f, 3, server.Options{})
	base := "http://" + srv.HTTPAddr() + "/api/v2/"
	txid := blocks[1].Txs[0].ID.String()
	for _, seed := range []struct {
		route      byte
		arg, query string
	}{
		{0, "1", ""},
		{1, txid, ""},
		{2, txid, ""},
		{3, "2", "page=1&pageSize=10"},
		{4, "12c6DSiU4Rq3P4ZxziKxzrGLCmMzh6dK8q", "details=txs&page=2&pageSize=1&from=0&to=3"},
		{5, "xpub661MyMwAqRbcF", "gap=20"},
		{6, "12c6DSiU4Rq3P4ZxziKxzrGLCmMzh6dK8q", "confirmed=true"},
		{7, "12c6DSiU4Rq3P4ZxziKxzrGLCmMzh6dK8q", "from=0&to=99999999999&groupBy=3600&fiatcurrency=usd"},
		{8, "6", "conservative=false"},
		{9, "0100", ""},
	} {
		f.Add(seed.route, seed.arg, seed.query)
	}
	c := &http.Client{Timeout: 30 * time.Second}
	f.Fuzz(func(t *testing.T, route byte, arg, query string) {
		q, err := url.ParseQuery(query)
		if err != nil {
			return // not a query a client's library sends
		}
		name := blockbookRoutes[int(route)%len(blockbookRoutes)]
		u := base + name + "/" + url.PathEscape(arg) + "?" + q.Encode()
		resp, err := c.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		if !json.Valid(body) {
			t.Fatalf("GET %s: HTTP %d, not JSON: %.300s", u, resp.StatusCode, body)
		}
		if resp.StatusCode >= 500 && name != "sendtx" {
			t.Fatalf("GET %s: HTTP %d: %.300s", u, resp.StatusCode, body)
		}
	})
}
