package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/utxostore/utxostore/client"
	pb "github.com/utxostore/utxostore/proto/utxostorepb"
)

// peakRSS is the daemon's peak resident memory so far (VmHWM), in bytes.
func (d *daemon) peakRSS(t *testing.T) int64 {
	t.Helper()
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skipf("no /proc to measure the daemon's memory: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(d.cmd.Process.Pid), "status"))
	if err != nil {
		t.Fatalf("the daemon's memory: %v\n%s", err, d.log())
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Skip("no VmHWM in /proc status")
	return 0
}

// peakGrowthOfLargeCreates sends six 60 MiB Create calls of garbage with
// token at once, expects each to be refused with want (the calls are
// named by what in the messages), and returns how much the daemon's peak
// memory grew meanwhile.
func peakGrowthOfLargeCreates(t *testing.T, d *daemon, token string, want codes.Code, what string) int64 {
	t.Helper()
	c, err := client.Dial(d.grpc, client.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := testContext(t)
	payload := make([]byte, 60<<20)
	errs := make([]error, 6)
	before := d.peakRSS(t)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.Stub().Create(ctx, &pb.CreateRequest{Tx: payload})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if status.Code(err) != want {
			t.Errorf("call %d %s: want %v, got %v", i, what, want, err)
		}
	}
	after := d.peakRSS(t)
	t.Logf("daemon peak RSS: %d MiB before, %d MiB after 6 concurrent 60 MiB calls %s", before>>20, after>>20, what)
	return after - before
}

// TestUnauthenticatedMessagesAreNotRead: six concurrent 60 MiB Create calls
// without the token are refused before their messages are read, so the
// daemon's peak memory does not grow by their size.
func TestUnauthenticatedMessagesAreNotRead(t *testing.T) {
	d := startDaemon(t, "serve", "--engine", "memory", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--token", "s3cret")
	if grew := peakGrowthOfLargeCreates(t, d, "", codes.Unauthenticated, "without the token"); grew > 60<<20 {
		t.Errorf("peak RSS grew by %d MiB: the refused messages were read", grew>>20)
	}
}

// TestInflightMemoryIsBounded: with --max-inflight-bytes equal to
// --max-message, six concurrent authorized 60 MiB calls are served one at
// a time, so the daemon's peak memory stays well under what six at once
// take. (Reading and decoding one such call holds about three copies of
// its message; with the garbage collector's headroom one call at a time
// peaks near 500 MiB, six at once near 1.1 GiB.)
func TestInflightMemoryIsBounded(t *testing.T) {
	d := startDaemon(t, "serve", "--engine", "memory", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--token", "s3cret",
		"--max-message", strconv.Itoa(64<<20), "--max-inflight-bytes", strconv.Itoa(64<<20))
	if grew := peakGrowthOfLargeCreates(t, d, "s3cret", codes.InvalidArgument, "of garbage"); grew > 700<<20 {
		t.Errorf("peak RSS grew by %d MiB: more than one 60 MiB call was held at once", grew>>20)
	}
}

// TestHTTPNeedsTheToken: with a token, /api and /metrics need it (health
// probes do not) unless --http-public; a token on a non-loopback address
// needs TLS unless --trusted-network.
func TestHTTPNeedsTheToken(t *testing.T) {
	d := startDaemon(t, "serve", "--engine", "memory", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--token", "s3cret")
	base := "http://" + d.http
	for _, c := range []struct {
		path, token string
		code        int
	}{
		{"/api/status", "", 401},
		{"/api/status", "guess", 401},
		{"/api/status", "s3cret", 200},
		{"/api/v2/tx/" + strings.Repeat("ab", 32), "", 401},
		{"/metrics", "", 401},
		{"/metrics", "s3cret", 200},
		{"/health/live", "", 200},
		{"/health/ready", "", 200},
	} {
		if code, body := httpGetToken(t, base+c.path, c.token); code != c.code {
			t.Errorf("GET %s with token %q: want %d, got %d %s", c.path, c.token, c.code, code, body)
		}
	}
	open := startDaemon(t, "serve", "--engine", "memory", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--token", "s3cret", "--http-public")
	for _, path := range []string{"/api/status", "/metrics"} {
		if code, body := httpGet(t, "http://"+open.http+path); code != 200 {
			t.Errorf("GET %s with --http-public: want 200, got %d %s", path, code, body)
		}
	}
	if err := open.stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("SIGTERM: %v", err)
	}

	anywhere := []string{"serve", "--engine", "memory", "--grpc", "0.0.0.0:0", "--http", "127.0.0.1:0", "--token", "s3cret"}
	if _, stderr, err := run(t, anywhere...); err == nil || !strings.Contains(stderr, "needs TLS") {
		t.Errorf("a token on 0.0.0.0 without TLS: want a refusal saying it needs TLS, got %v:\n%s", err, stderr)
	}
	certFile, keyFile, _ := selfSigned(t)
	for _, extra := range [][]string{{"--trusted-network"}, {"--tls-cert", certFile, "--tls-key", keyFile}} {
		d := startDaemon(t, append(anywhere, extra...)...)
		if err := d.stop(t, syscall.SIGTERM); err != nil {
			t.Errorf("%v: SIGTERM: %v", extra, err)
		}
	}
}

// rawRequest writes a request on a new connection and returns the
// connection, with a read deadline that bounds the test, not the daemon.
func rawConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	return conn
}

// TestSlowAndIdleConnectionsAreCut: a body that trickles, headers that
// never end and an idle keep-alive connection are each cut after the
// configured timeouts (set short here; 20 s is the test's own bound).
func TestSlowAndIdleConnectionsAreCut(t *testing.T) {
	d := startDaemon(t, "serve", "--engine", "memory", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0",
		"--http-header-timeout", "1s", "--http-read-timeout", "2s", "--idle-timeout", "2s")

	slowBody := rawConn(t, d.http)
	io.WriteString(slowBody, "POST /api/status HTTP/1.1\r\nHost: utxostore\r\nContent-Length: 100\r\n\r\nx")
	start := time.Now()
	if resp, err := http.ReadResponse(bufio.NewReader(slowBody), nil); err == nil {
		resp.Body.Close()
	} else if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a body that never completes: want it cut, got %v after %s", err, time.Since(start))
	}

	slowHeaders := rawConn(t, d.http)
	io.WriteString(slowHeaders, "GET /health/live HTTP/1.1\r\nHost: utxostore\r\n")
	if _, err := io.ReadAll(slowHeaders); err != nil {
		t.Errorf("headers that never end: want the connection closed, got %v", err)
	}

	idle := rawConn(t, d.http)
	io.WriteString(idle, "GET /health/live HTTP/1.1\r\nHost: utxostore\r\n\r\n")
	reader := bufio.NewReader(idle)
	resp, err := http.ReadResponse(reader, nil)
	if err != nil {
		t.Fatalf("a request on a keep-alive connection: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if _, err := reader.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("an idle keep-alive connection: want it closed, got %v", err)
	}
}

// TestConnectionLimit: with --max-conns 3, a fourth connection is not
// served while three are open, and is once one of them closes.
func TestConnectionLimit(t *testing.T) {
	d := startDaemon(t, "serve", "--engine", "memory", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--max-conns", "3")
	var held []net.Conn
	for range 3 {
		conn := rawConn(t, d.http)
		io.WriteString(conn, "GET /health/live HTTP/1.1\r\nHost: utxostore\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("one of the first three connections: %v", err)
		}
		resp.Body.Close()
		held = append(held, conn)
	}
	get := func(timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.http+"/health/live", nil)
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(time.Second); err == nil {
		t.Error("a fourth connection was served while three were open")
	}
	held[0].Close()
	if err := get(20 * time.Second); err != nil {
		t.Errorf("after one of three connections closed: want the next one served, got %v", err)
	}
}

// TestConfigShowsTheLimits: `config` shows the limits and their defaults.
func TestConfigShowsTheLimits(t *testing.T) {
	out, stderr, err := run(t, "config")
	if err != nil {
		t.Fatalf("config: %v\n%s", err, stderr)
	}
	for _, want := range []string{
		`(?m)^http-header-timeout\s+10s\s+default$`,
		`(?m)^http-read-timeout\s+1m0s\s+default$`,
		`(?m)^idle-timeout\s+2m0s\s+default$`,
		`(?m)^max-conns\s+512\s+default$`,
		`(?m)^max-inflight-bytes\s+1073741824\s+default$`,
		`(?m)^http-public\s+false\s+default$`,
		`(?m)^trusted-network\s+false\s+default$`,
		`(?m)^health\s+default$`,
		`(?m)^http-write-timeout\s+1m0s\s+default$`,
		`(?m)^max-conn-requests\s+1000\s+default$`,
		`(?m)^grpc-read-timeout\s+1m0s\s+default$`,
		`(?m)^grpc-max-streams\s+128\s+default$`,
		`(?m)^max-websockets\s+256\s+default$`,
		`(?m)^ws-max-addresses\s+1000\s+default$`,
		`(?m)^ws-max-addresses-total\s+100000\s+default$`,
		`(?m)^ws-queue\s+256\s+default$`,
		`(?m)^max-xpub-gap\s+10000\s+default$`,
		`(?m)^max-xpub-addresses\s+30000\s+default$`,
		`(?m)^max-request-txs\s+100000\s+default$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("config: want a line matching %s in:\n%s", want, out)
		}
	}
}

// TestServeLogsJSON: with --log-format json every line serve writes on
// stderr is one JSON record, the listening record carries the addresses,
// and config shows the setting.
func TestServeLogsJSON(t *testing.T) {
	d := startDaemon(t, "serve", "--engine", "memory", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--log-format", "json")
	if code, body := httpGet(t, "http://"+d.http+"/health/ready"); code != 200 {
		t.Fatalf("/health/ready: %d %s", code, body)
	}
	if err := d.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: want a clean exit, got %v:\n%s", err, d.log())
	}
	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(d.log()), "\n") {
		var rec struct{ Level, Msg, GRPC, HTTP string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Level == "" || rec.Msg == "" {
			t.Fatalf("stderr line %q is not a JSON log record (%v)", line, err)
		}
		if rec.Msg == "listening" && (rec.GRPC != d.grpc || rec.HTTP != d.http) {
			t.Errorf("listening record names grpc=%s http=%s, the daemon is at %s and %s", rec.GRPC, rec.HTTP, d.grpc, d.http)
		}
		msgs = append(msgs, rec.Msg)
	}
	if want := []string{"listening", "shutting down"}; strings.Join(msgs, "|") != strings.Join(want, "|") {
		t.Errorf("records %q, want %q", msgs, want)
	}

	out, stderr, err := run(t, "config", "--log-format", "json")
	if err != nil || !regexp.MustCompile(`(?m)^log-format\s+json\s+flag$`).MatchString(out) {
		t.Errorf("config --log-format json: %v %s\n%s", err, stderr, out)
	}
	if _, stderr, err := run(t, "config", "--log-format", "xml"); err == nil || !strings.Contains(stderr, `want "text" or "json"`) {
		t.Errorf("config --log-format xml: want a refusal, got %v %s", err, stderr)
	}
}
