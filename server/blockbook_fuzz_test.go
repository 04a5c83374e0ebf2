package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/gorilla/websocket"

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

// FuzzBlockbookWebsocket: whatever message a client sends the websocket,
// each answer is JSON and a ping sent after it is answered: no message
// can crash the daemon, stall the connection or close it.
func FuzzBlockbookWebsocket(f *testing.F) {
	srv, blocks := indexedDaemon(f, 3, server.Options{})
	txid := blocks[1].Txs[0].ID.String()
	for _, seed := range []string{
		`{"id":"1","method":"getInfo"}`,
		`{"id":"2","method":"getBlockHash","params":{"height":1}}`,
		`{"id":"3","method":"getAccountInfo","params":{"descriptor":"12c6DSiU4Rq3P4ZxziKxzrGLCmMzh6dK8q","details":"txs","page":1,"pageSize":5}}`,
		`{"id":"4","method":"getAccountUtxo","params":{"descriptor":"12c6DSiU4Rq3P4ZxziKxzrGLCmMzh6dK8q"}}`,
		`{"id":"5","method":"getTransaction","params":{"txid":"` + txid + `"}}`,
		`{"id":"6","method":"getTransactionSpecific","params":{"txid":"` + txid + `"}}`,
		`{"id":"7","method":"getBalanceHistory","params":{"descriptor":"12c6DSiU4Rq3P4ZxziKxzrGLCmMzh6dK8q","from":0,"to":9999999999,"groupBy":60}}`,
		`{"id":"8","method":"estimateFee","params":{"blocks":[2,6,1008]}}`,
		`{"id":"9","method":"sendTransaction","params":{"hex":"0100"}}`,
		`{"id":"10","method":"subscribeAddresses","params":{"addresses":["12c6DSiU4Rq3P4ZxziKxzrGLCmMzh6dK8q"]}}`,
		`{"id":"11","method":"subscribeNewBlock"}`,
		`{"id":"12","method":"unsubscribeAddresses"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		ws, _, err := websocket.DefaultDialer.Dial("ws://"+srv.HTTPAddr()+"/websocket", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		if err := ws.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := ws.WriteMessage(websocket.TextMessage, msg); err != nil {
			t.Fatal(err)
		}
		if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"id":"fuzz-probe","method":"ping"}`)); err != nil {
			t.Fatal(err)
		}
		for {
			_, answer, err := ws.ReadMessage()
			if err != nil {
				t.Fatalf("after %q, no answer to the ping that followed it: %v", msg, err)
			}
			var a struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(answer, &a); err != nil {
				t.Fatalf("after %q, an answer that is not JSON: %.300s", msg, answer)
			}
			if a.ID == "fuzz-probe" {
				return
			}
		}
	})
}
