package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/gorilla/websocket"
)

// dialWebsocket opens a websocket to the daemon, closed with the test.
func dialWebsocket(t *testing.T, d *daemon) *websocket.Conn {
	t.Helper()
	ws, resp, err := websocket.DefaultDialer.Dial("ws://"+d.http+"/websocket", nil)
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		t.Fatalf("websocket: %v (%d)", err, code)
	}
	t.Cleanup(func() { ws.Close() })
	ws.SetReadDeadline(time.Now().Add(60 * time.Second))
	return ws
}

// wsRoundTrip sends one request and returns its answer's data as JSON.
func wsRoundTrip(t *testing.T, ws *websocket.Conn, method string, params any) string {
	t.Helper()
	data, err := wsAsk(ws, method, params)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// wsAsk is wsRoundTrip for a goroutine of its own: it returns the error.
func wsAsk(ws *websocket.Conn, method string, params any) (string, error) {
	if err := ws.WriteJSON(map[string]any{"id": method, "method": method, "params": params}); err != nil {
		return "", fmt.Errorf("%s: %w", method, err)
	}
	var answer struct {
		ID   string          `json:"id"`
		Data json.RawMessage `json:"data"`
	}
	if err := ws.ReadJSON(&answer); err != nil {
		return "", fmt.Errorf("%s: %w", method, err)
	}
	if answer.ID != method {
		return "", fmt.Errorf("%s: the answer has id %q", method, answer.ID)
	}
	return string(answer.Data), nil
}

// rss is the daemon's resident memory now (VmRSS), in bytes.
func (d *daemon) rss(t *testing.T) int64 {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(d.cmd.Process.Pid), "status"))
	if err != nil {
		t.Skipf("no /proc to measure the daemon's memory: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Skip("no VmRSS in /proc status")
	return 0
}

// testAddresses are n mainnet addresses of made-up keys.
func testAddresses(t *testing.T, n int) []string {
	t.Helper()
	out := make([]string, n)
	for i := range out {
		hash := btcutil.Hash160([]byte(strconv.Itoa(i)))
		a, err := btcutil.NewAddressPubKeyHash(hash, &chaincfg.MainNetParams)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = a.EncodeAddress()
	}
	return out
}

// TestWebsocketSubscriptionsAreBounded: 500 websockets each ask for 25,000
// addresses and are refused past --ws-max-addresses; then each asks for
// the 1,000 it may have, and those past --ws-max-addresses-total are
// refused. A websocket past --max-websockets is refused with 429. Once
// they close, the daemon's resident memory returns within 20% of what it
// was before them.
func TestWebsocketSubscriptionsAreBounded(t *testing.T) {
	const conns, perConn, total = 500, 1000, 100_000
	d := startDaemon(t, "serve", "--engine", "memory", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--max-websockets", strconv.Itoa(conns))
	many := testAddresses(t, 25_000)
	// The start is a daemon that has run the code of these requests once
	// (their pages of the binary are resident), with one client.
	first := dialWebsocket(t, d)
	mustContain(t, "a subscription of 25,000 addresses", wsRoundTrip(t, first, "subscribeAddresses", map[string]any{"addresses": many}), "--ws-max-addresses)")
	mustContain(t, "a subscription of 1,000 addresses", wsRoundTrip(t, first, "subscribeAddresses", map[string]any{"addresses": many[:perConn]}), `"subscribed":true`)
	first.Close()
	before := d.rss(t)

	sockets := make([]*websocket.Conn, conns)
	for i := range sockets {
		sockets[i] = dialWebsocket(t, d)
	}
	if _, resp, err := websocket.DefaultDialer.Dial("ws://"+d.http+"/websocket", nil); err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("websocket %d: want 429 past --max-websockets, got %v", conns+1, err)
	}
	answers := make([][2]string, conns)
	errs := make([]error, conns)
	var wg sync.WaitGroup
	for i, ws := range sockets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if answers[i][0], errs[i] = wsAsk(ws, "subscribeAddresses", map[string]any{"addresses": many}); errs[i] == nil {
				answers[i][1], errs[i] = wsAsk(ws, "subscribeAddresses", map[string]any{"addresses": many[i%25*perConn : (i%25+1)*perConn]})
			}
		}()
	}
	wg.Wait()
	subscribed := 0
	for i, a := range answers {
		if errs[i] != nil {
			t.Fatalf("websocket %d: %v", i, errs[i])
		}
		if !strings.Contains(a[0], "--ws-max-addresses)") {
			t.Fatalf("websocket %d subscribing 25,000 addresses: want a refusal naming --ws-max-addresses, got %.200s", i, a[0])
		}
		switch {
		case strings.Contains(a[1], `"subscribed":true`):
			subscribed++
		case !strings.Contains(a[1], "--ws-max-addresses-total"):
			t.Fatalf("websocket %d subscribing 1,000 addresses: want success or a refusal naming --ws-max-addresses-total, got %.200s", i, a[1])
		}
	}
	if subscribed != total/perConn {
		t.Errorf("%d websockets subscribed 1,000 addresses, want %d (--ws-max-addresses-total %d)", subscribed, total/perConn, total)
	}
	peak := d.rss(t)
	for _, ws := range sockets {
		ws.Close()
	}
	// The daemon returns the memory a second after the last close.
	deadline := time.Now().Add(30 * time.Second)
	now := d.rss(t)
	for ; now > before*12/10; now = d.rss(t) {
		if time.Now().After(deadline) {
			t.Fatalf("resident memory %d MiB before the websockets, %d MiB with them, still %d MiB 30s after they closed", before>>20, peak>>20, now>>20)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("resident memory %d MiB before the websockets, %d MiB with them, %d MiB once they closed", before>>20, peak>>20, now>>20)
	// Their subscriptions went with them: as many can subscribe again.
	again := dialWebsocket(t, d)
	mustContain(t, "subscribing after the others closed", wsRoundTrip(t, again, "subscribeAddresses", map[string]any{"addresses": many[:perConn]}), `"subscribed":true`)
}

// TestWebsocketBurstIsAnsweredNotDropped: a client that sends 2,000
// requests at once and then reads gets an answer to each, "too many
// requests" for those past --ws-queue, and keeps its connection; a
// message that is no request gets an error reply, and the connection
// stays too.
func TestWebsocketBurstIsAnsweredNotDropped(t *testing.T) {
	const burst = 2000
	d := startDaemon(t, "serve", "--engine", "memory", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
	ws := dialWebsocket(t, d)
	for i := range burst {
		if err := ws.WriteJSON(map[string]any{"id": strconv.Itoa(i), "method": "ping", "params": map[string]any{}}); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	pongs, refused := 0, 0
	for i := range burst {
		var answer struct {
			ID   string          `json:"id"`
			Data json.RawMessage `json:"data"`
		}
		if err := ws.ReadJSON(&answer); err != nil {
			t.Fatalf("answer %d of %d (%d pongs, %d refused so far): %v", i+1, burst, pongs, refused, err)
		}
		switch data := string(answer.Data); {
		case data == "{}":
			pongs++
		case strings.Contains(data, "too many requests") && strings.Contains(data, "--ws-queue"):
			refused++
		default:
			t.Fatalf("answer %s: %s", answer.ID, data)
		}
	}
	t.Logf("%d requests at once: %d answered, %d refused as too many", burst, pongs, refused)
	if pongs == 0 {
		t.Error("no request of the burst was answered")
	}

	for _, bad := range []string{"not json", `{"id": 7}`, `["ping"]`} {
		if err := ws.WriteMessage(websocket.TextMessage, []byte(bad)); err != nil {
			t.Fatal(err)
		}
		var answer struct {
			Data struct {
				Error struct{ Message string } `json:"error"`
			} `json:"data"`
		}
		if err := ws.ReadJSON(&answer); err != nil {
			t.Fatalf("after the message %q: want an error reply, got %v", bad, err)
		}
		if !strings.Contains(answer.Data.Error.Message, "not a request") {
			t.Errorf("the message %q: want an error saying it is not a request, got %q", bad, answer.Data.Error.Message)
		}
	}
	mustContain(t, "a ping after the bad messages", wsRoundTrip(t, ws, "ping", map[string]any{}), "{}")
}

// TestWebsocketClientThatNeverReadsIsDisconnected: a client that sends
// requests and reads nothing is disconnected once the daemon cannot write
// to it, and its websocket slot (--max-websockets 1) serves the next
// client.
func TestWebsocketClientThatNeverReadsIsDisconnected(t *testing.T) {
	d := startDaemon(t, "serve", "--engine", "memory", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--max-websockets", "1")
	deaf := dialWebsocket(t, d)
	sent := make(chan int, 1)
	go func() {
		n := 0
		deaf.SetWriteDeadline(time.Now().Add(90 * time.Second))
		for deaf.WriteJSON(map[string]any{"id": strconv.Itoa(n), "method": "getInfo", "params": map[string]any{}}) == nil {
			n++
		}
		sent <- n
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ws, resp, err := websocket.DefaultDialer.Dial("ws://"+d.http+"/websocket", nil)
		if err == nil {
			ws.Close()
			break
		}
		if resp == nil || resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("a second websocket: want 429 while the first holds the slot, got %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the client that reads nothing still holds its websocket 60s on")
		}
		time.Sleep(200 * time.Millisecond)
	}
	deaf.Close()
	t.Logf("the client sent %d requests before its connection closed", <-sent)
}
