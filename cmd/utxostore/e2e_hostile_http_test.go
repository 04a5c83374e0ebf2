package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/wire"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/utxostore/utxostore/proto/utxostorepb"
)

// healthAddr is the daemon's --health listener, from its listening record.
func (d *daemon) healthAddr(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`health=(\S+:\d+)`).FindStringSubmatch(d.log())
	if m == nil {
		t.Fatalf("the listening record names no health listener:\n%s", d.log())
	}
	return m[1]
}

// getWithin GETs url and fails t unless it answers 200 within timeout.
func getWithin(t *testing.T, url string, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	start := time.Now()
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Errorf("GET %s: %v after %s", url, err, time.Since(start).Round(time.Millisecond))
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %d", url, resp.StatusCode)
	}
}

// TestPipeliningClientsLeaveHealthAnswering: 520 connections (more than
// --max-conns) that pipeline requests without the token and never read
// the answers leave /health/live and /health/ready answering within a
// second on the --health listener; each of them is closed after
// --max-conn-requests answers, and the API's listener serves again.
func TestPipeliningClientsLeaveHealthAnswering(t *testing.T) {
	const conns, maxConnRequests, pipelined = 520, 20, 200
	d := startDaemon(t, "serve", "--engine", "memory", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--token", "s3cret",
		"--health", "127.0.0.1:0", "--max-conn-requests", strconv.Itoa(maxConnRequests))
	health := d.healthAddr(t)
	request := strings.Repeat("GET /api/v2/tx/"+strings.Repeat("ab", 32)+" HTTP/1.1\r\nHost: utxostore\r\n\r\n", pipelined)
	attackers := make([]net.Conn, conns)
	for i := range attackers {
		conn, err := net.Dial("tcp", d.http)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		t.Cleanup(func() { conn.Close() })
		// The kernel takes the requests whether or not the daemon has
		// accepted the connection.
		if _, err := io.WriteString(conn, request); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		attackers[i] = conn
	}
	for range 3 {
		getWithin(t, "http://"+health+"/health/live", time.Second)
		getWithin(t, "http://"+health+"/health/ready", time.Second)
	}

	// Each connection gets at most --max-conn-requests answers, then the
	// daemon closes it.
	var wg sync.WaitGroup
	answers := make([]int, conns)
	errs := make([]error, conns)
	for i, conn := range attackers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			r := bufio.NewReader(conn)
			for {
				resp, err := http.ReadResponse(r, nil)
				if err != nil {
					if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !isReset(err) {
						errs[i] = err
					}
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				answers[i]++
			}
		}()
	}
	wg.Wait()
	for i := range attackers {
		if errs[i] != nil || answers[i] == 0 || answers[i] > maxConnRequests {
			t.Fatalf("connection %d: %d answers, then %v; want 1 to %d, then the connection closed", i, answers[i], errs[i], maxConnRequests)
		}
	}
	getWithin(t, "http://"+d.http+"/health/live", 10*time.Second)
}

// isReset reports a connection the daemon reset: it closed it with the
// client's requests still unread.
func isReset(err error) bool {
	var opErr *net.OpError
	return errors.As(err, &opErr) && strings.Contains(opErr.Err.Error(), "connection reset")
}

// cpuTime is the CPU time the daemon has used so far.
func (d *daemon) cpuTime(t *testing.T) time.Duration {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(d.cmd.Process.Pid), "stat"))
	if err != nil {
		t.Skipf("no /proc to measure the daemon's CPU time: %v", err)
	}
	// The fields after the command name, which is in parentheses: utime
	// and stime are the 12th and 13th, in clock ticks of 10ms.
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// cpuOver is the daemon's CPU time over the next window.
func (d *daemon) cpuOver(t *testing.T, window time.Duration) time.Duration {
	t.Helper()
	before := d.cpuTime(t)
	time.Sleep(window) // a measurement window, not a wait for an event
	return d.cpuTime(t) - before
}

// testXpub is an account key (m/44'/0'/0') of a seed made for the test: no
// address of it is in any chain.
func testXpub(t *testing.T) string {
	t.Helper()
	key, err := hdkeychain.NewMaster([]byte("utxostore hostile xpub test seed"), &chaincfg.MainNetParams)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []uint32{44, 0, 0} {
		if key, err = key.Derive(hdkeychain.HardenedKeyStart + i); err != nil {
			t.Fatal(err)
		}
	}
	pub, err := key.Neuter()
	if err != nil {
		t.Fatal(err)
	}
	return pub.String()
}

// TestAbandonedXpubRequestStops: an xpub request for a gap of a million
// (allowed here) keeps the daemon busy deriving; once its client leaves,
// the daemon's CPU use falls to nothing within a second. The same request
// with no client leaving ends at --http-write-timeout with 503.
func TestAbandonedXpubRequestStops(t *testing.T) {
	d, _ := seededDaemon(t, 5, "--max-xpub-gap", "1000000", "--max-xpub-addresses", "3000000", "--http-write-timeout", "5s")
	url := "http://" + d.http + "/api/v2/xpub/" + testXpub(t) + "?gap=1000000"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answered := make(chan int, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	if busy := d.cpuOver(t, 500*time.Millisecond); busy < 150*time.Millisecond {
		t.Fatalf("the daemon used %s of CPU in 500ms of the request: it is not deriving", busy)
	}
	cancel()
	left := time.Now()
	if code := <-answered; code != 0 {
		t.Fatalf("the request was answered (%d) before its client left: it did no long work", code)
	}
	for {
		// 10% of one CPU over a quarter of a second: what the runtime
		// does on its own, not a derivation.
		if d.cpuOver(t, 250*time.Millisecond) <= 25*time.Millisecond {
			break
		}
		if since := time.Since(left); since > time.Second+250*time.Millisecond {
			t.Fatalf("the daemon was still busy %s after the client left", since.Round(time.Millisecond))
		}
	}

	// Nobody leaves: the work ends when the answer could no longer be
	// written.
	start := time.Now()
	code, body := httpGet(t, url)
	if took := time.Since(start); code != http.StatusServiceUnavailable || took > 10*time.Second {
		t.Errorf("a request over --http-write-timeout 5s: want 503 at about 5s, got %d after %s: %s", code, took, body)
	}
}

// spentAddress is the output script of an output of the demo chain that a
// later transaction spends: an address in two transactions.
func spentAddress(t *testing.T, gen *demoChain) string {
	t.Helper()
	scripts := map[wire.OutPoint][]byte{}
	for _, b := range gen.blocks {
		for _, tx := range b.Txs {
			for _, in := range tx.Msg.TxIn {
				if s, ok := scripts[in.PreviousOutPoint]; ok && !tx.IsCoinbase() {
					return hex.EncodeToString(s)
				}
			}
			for i, o := range tx.Msg.TxOut {
				scripts[wire.OutPoint{Hash: tx.ID, Index: uint32(i)}] = o.PkScript
			}
		}
	}
	t.Fatal("the demo chain spends no output")
	return ""
}

// TestRequestLimitsAreRefusedNamingThem: a gap over --max-xpub-gap (by
// default Blockbook's 10,000), an xpub needing more than
// --max-xpub-addresses and a request gathering more than --max-request-txs
// are refused with 400 naming the flag, over HTTP and the websocket.
func TestRequestLimitsAreRefusedNamingThem(t *testing.T) {
	d, gen := seededDaemon(t, 120, "--max-xpub-addresses", "100", "--max-request-txs", "1")
	base := "http://" + d.http + "/api/v2/"
	xpub := testXpub(t)
	addr := spentAddress(t, gen)
	for path, flag := range map[string]string{
		"xpub/" + xpub + "?gap=10001":             "--max-xpub-gap",
		"utxo/" + xpub + "?gap=1000000":           "--max-xpub-gap",
		"balancehistory/" + xpub + "?gap=10001":   "--max-xpub-gap",
		"xpub/" + xpub + "?gap=51":                "--max-xpub-addresses",
		"balancehistory/" + addr:                  "--max-request-txs",
		"xpub/" + xpub + "?gap=50&details=txids":  "",
		"balancehistory/" + xpub + "?gap=20":      "",
		"address/" + addr + "?details=txids":      "",
		"utxo/" + addr:                            "",
		"xpub/" + xpub + "?gap=-3&details=basic":  "",
		"utxo/" + xpub + "?gap=0&confirmed=false": "",
	} {
		code, body := httpGet(t, base+path)
		switch {
		case flag == "" && code != http.StatusOK:
			t.Errorf("GET %s: want 200 within the limits, got %d %s", path, code, body)
		case flag != "" && (code != http.StatusBadRequest || !strings.Contains(body, flag)):
			t.Errorf("GET %s: want 400 naming %s, got %d %s", path, flag, code, body)
		}
	}
	ws := dialWebsocket(t, d)
	answer := wsRoundTrip(t, ws, "getAccountInfo", map[string]any{"descriptor": xpub, "gap": 20000})
	mustContain(t, "getAccountInfo of a gap of 20,000 over the websocket", answer, "--max-xpub-gap")
	answer = wsRoundTrip(t, ws, "getBalanceHistory", map[string]any{"descriptor": addr})
	mustContain(t, "getBalanceHistory over --max-request-txs on the websocket", answer, "--max-request-txs")
}

// mainnetDaemon serves, with --index, the first blocks of the mainnet file
// imported with --index.
func mainnetDaemon(t *testing.T, blocks int, extra ...string) *daemon {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	if _, stderr, err := run(t, "import", "--index", "--data", data, "--sync", "block", "--quiet", chainPrefix(t, blocks)); err != nil {
		t.Fatalf("import --index: %v\n%s", err, stderr)
	}
	return startDaemon(t, append([]string{"serve", "--index", "--data", data, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"}, extra...)...)
}

// TestBlockIDOf64DigitsIsAHash: a block id of 64 decimal digits is a hash
// (of no block here), never a height, however small its value.
func TestBlockIDOf64DigitsIsAHash(t *testing.T) {
	d := mainnetDaemon(t, 20)
	base := "http://" + d.http + "/api/v2/"
	id := strings.Repeat("0", 63) + "1"
	if code, body := httpGet(t, base+"block/"+id); code != http.StatusBadRequest || !strings.Contains(body, "Block not found") {
		t.Errorf("block/%s: want 400 Block not found, got %d %s", id, code, body)
	}
	var one, tip, got struct {
		BlockHash string `json:"blockHash"`
	}
	getJSON(t, base+"block-index/1", &one)
	getJSON(t, base+"block-index/tip", &tip)
	getJSON(t, base+"block-index/"+id, &got)
	if got.BlockHash == one.BlockHash || got.BlockHash != tip.BlockHash {
		t.Errorf("block-index/%s: got %s, want the tip's %s (as for any id that is no height), not block 1's", id, got.BlockHash, tip.BlockHash)
	}
	// 63 digits are still a height.
	if code, body := httpGet(t, base+"block/"+id[1:]); code != http.StatusOK || !strings.Contains(body, one.BlockHash) {
		t.Errorf("block/%s: want block 1, got %d %s", id[1:], code, body)
	}
}

// TestNoNodeAnswersAreNotLoggedAsErrors: sendtx without a node answers
// 503 over HTTP and Unavailable over gRPC, as configured, and logs no
// ERROR; a fault still does (the fault logging test covers that).
// estimatefee needs no node: an empty store estimates the relay floor.
func TestNoNodeAnswersAreNotLoggedAsErrors(t *testing.T) {
	d := startDaemon(t, "serve", "--engine", "memory", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
	for _, path := range []string{"/api/v2/sendtx/0100"} {
		if code, body := httpGet(t, "http://"+d.http+path); code != http.StatusServiceUnavailable {
			t.Errorf("GET %s: want 503, got %d %s", path, code, body)
		}
	}
	for _, path := range []string{"/api/v2/estimatefee/2", "/api/estimatefee/6"} {
		var fee struct{ Result string }
		code, body := httpGet(t, "http://"+d.http+path)
		if err := json.Unmarshal([]byte(body), &fee); code != http.StatusOK || err != nil || fee.Result != "0.00001000" {
			t.Errorf("GET %s without a node: want 200 and the relay floor, got %d %q", path, code, body)
		}
	}
	c := dialDaemon(t, d, "")
	if _, err := c.Stub().SendTx(testContext(t), &pb.TxRequest{Tx: valuesTx(t, 10).Raw}); status.Code(err) != codes.Unavailable {
		t.Errorf("gRPC SendTx without a node: want Unavailable, got %v", err)
	}
	// The answers are written after they are logged, so the log is
	// complete here.
	if strings.Contains(d.log(), "level=ERROR") {
		t.Errorf("answers without a node were logged as errors:\n%s", d.log())
	}
}

// TestClientTakesFlagsAfterTheSubcommand: `client import --server X FILE`
// reads --server as a flag, not as a file.
func TestClientTakesFlagsAfterTheSubcommand(t *testing.T) {
	blocks := chainPrefix(t, 20)
	d := startDaemon(t, "serve", "--engine", "memory", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
	out, stderr, err := run(t, "client", "import", "--server", d.grpc, "--quiet", blocks)
	if err != nil {
		t.Fatalf("client import --server %s --quiet FILE: %v\n%s", d.grpc, err, stderr)
	}
	mustContain(t, "the import's summary line", out, `"blocks":20`)
	out, stderr, err = run(t, "client", "health", "--server", d.grpc)
	if err != nil {
		t.Fatalf("client health --server: %v\n%s", err, stderr)
	}
	mustContain(t, "client health", out, fmt.Sprintf(`"Height": %d`, 19))
}

// TestReadmeListsEveryLimit: the README's table of limits holds every
// limit flag, each with the default `config` shows, and an environment
// variable sets each like any serve flag.
func TestReadmeListsEveryLimit(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `--([a-z-]+)` \\| ([^|]+) \\|").FindAllStringSubmatch(string(readme), -1)
	out, stderr, err := run(t, "config")
	if err != nil {
		t.Fatalf("config: %v\n%s", err, stderr)
	}
	shown := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 3 {
			shown[f[0]] = f[1]
		} else if len(f) == 2 {
			shown[f[0]] = ""
		}
	}
	listed := map[string]bool{}
	for _, row := range rows {
		name, def := row[1], strings.TrimSpace(row[2])
		listed[name] = true
		got, ok := shown[name]
		if !ok {
			t.Errorf("the README lists --%s, which config does not show", name)
			continue
		}
		want := def
		if d, err := time.ParseDuration(def); err == nil {
			want = d.String()
		}
		if def == "off" {
			want = ""
		}
		if want != got {
			t.Errorf("--%s: the README says %q, config shows %q", name, def, got)
		}
	}
	for _, name := range []string{"max-conns", "idle-timeout", "http-header-timeout", "http-read-timeout", "http-write-timeout",
		"max-body", "max-conn-requests", "health", "max-message", "max-batch", "max-inflight-bytes", "grpc-read-timeout",
		"grpc-max-streams", "max-websockets", "ws-max-addresses", "ws-max-addresses-total", "ws-queue", "max-xpub-gap",
		"max-xpub-addresses", "max-request-txs"} {
		if !listed[name] {
			t.Errorf("the README's table of limits lacks --%s", name)
		}
	}
	cmd := exec.Command(utxostoreBin, "config")
	cmd.Env = append(os.Environ(), "UTXOSTORE_MAX_REQUEST_TXS=7", "UTXOSTORE_WS_QUEUE=9")
	envOut, err := cmd.Output()
	if err != nil || !regexp.MustCompile(`(?m)^max-request-txs\s+7\s+env`).Match(envOut) || !regexp.MustCompile(`(?m)^ws-queue\s+9\s+env`).Match(envOut) {
		t.Errorf("config with UTXOSTORE_MAX_REQUEST_TXS and UTXOSTORE_WS_QUEUE: %v\n%s", err, envOut)
	}
}
