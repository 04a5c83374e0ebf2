package main

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble"
)

// wantElectrumError calls method and wants an error whose message holds
// every one of wants.
func wantElectrumError(t *testing.T, c *electrumClient, wants []string, method string, params ...any) {
	t.Helper()
	a := c.call(method, params...)
	if a.Error == nil {
		t.Fatalf("%s %v: want an error, got %s", method, params, a.Result)
	}
	for _, w := range wants {
		if !strings.Contains(a.Error.Message, w) {
			t.Fatalf("%s %v: the error %q does not say %q", method, params, a.Error.Message, w)
		}
	}
}

// TestElectrumLimits: the Electrum listener serves TLS with the daemon's
// certificate, and bounds subscriptions per connection and in all,
// request lines and idle connections, each refusal naming its flag; the
// listener's address follows the daemon's token and TLS rules.
func TestElectrumLimits(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	d := startDaemon(t, "serve", "--create", "--engine", "memory", "--index", "--network", "regtest", "--data", t.TempDir(),
		"--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--electrum", "127.0.0.1:0", "--tls-cert", certFile, "--tls-key", keyFile,
		"--electrum-max-subs", "2", "--electrum-max-subs-total", "3", "--electrum-max-request", "1000", "--electrum-idle-timeout", "1s")
	addr := electrumAddrOf(t, d)
	dial := func() *electrumClient {
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool})
		if err != nil {
			t.Fatalf("TLS: %v", err)
		}
		t.Cleanup(func() { conn.Close() })
		return &electrumClient{t: t, conn: conn, r: bufio.NewReaderSize(conn, 1<<20)}
	}
	a, b := dial(), dial()
	var version []string
	a.result(&version, "server.version", "test", "1.4")

	sh := func(n byte) string { return scriptHash([]byte{0x51, n}) }
	var status any
	a.result(&status, "blockchain.scripthash.subscribe", sh(1))
	a.result(&status, "blockchain.scripthash.subscribe", sh(2))
	a.result(&status, "blockchain.scripthash.subscribe", sh(2)) // again: no new subscription
	wantElectrumError(t, a, []string{"--electrum-max-subs"}, "blockchain.scripthash.subscribe", sh(3))
	b.result(&status, "blockchain.scripthash.subscribe", sh(4))
	wantElectrumError(t, b, []string{"--electrum-max-subs-total"}, "blockchain.scripthash.subscribe", sh(5))
	var had bool
	a.result(&had, "blockchain.scripthash.unsubscribe", sh(1))
	if !had {
		t.Fatal("unsubscribe of a subscription answered false")
	}
	b.result(&status, "blockchain.scripthash.subscribe", sh(5))

	// A line over --electrum-max-request is answered an error and the
	// connection closed.
	long := dial()
	if err := long.send([]byte(`{"jsonrpc":"2.0","id":1,"method":"server.ping","params":["` + strings.Repeat("x", 2000) + "\"]}\n")); err != nil {
		t.Fatal(err)
	}
	ans, err := long.read()
	if err != nil || ans.Error == nil || !strings.Contains(ans.Error.Message, "--electrum-max-request") {
		t.Fatalf("a long line: %+v %v", ans, err)
	}
	if _, err := long.read(); !errors.Is(err, io.EOF) {
		t.Fatalf("the connection of a long line stays open: %v", err)
	}

	// A connection that sends nothing is closed after the idle timeout.
	idle := dial()
	idle.result(&version, "server.version", "test", "1.4")
	start := time.Now()
	if _, err := idle.read(); !errors.Is(err, io.EOF) || time.Since(start) > 30*time.Second {
		t.Fatalf("an idle connection: %v after %v", err, time.Since(start))
	}

	// Beyond loopback: a token, and TLS or --trusted-network.
	data := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--electrum", "0.0.0.0:0"}, "needs a bearer token"},
		{[]string{"--electrum", "0.0.0.0:0", "--token", "s3cret"}, "needs TLS"},
		{[]string{"--electrum", "127.0.0.1:0"}, "--electrum needs --index"},
	} {
		args := append([]string{"serve", "--create", "--engine", "memory", "--network", "regtest", "--data", data, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"}, c.args...)
		_, stderr, err := run(t, args...)
		if err == nil || !strings.Contains(stderr, c.want) {
			t.Errorf("serve %v: want a refusal saying %q, got %v\n%s", c.args, c.want, err, stderr)
		}
	}
}

// TestElectrumRefusesAnIndexWithoutItsColumns: an address index made
// before its Electrum columns existed (here: one whose marker is removed)
// is refused by serve --electrum with what to run, and still served
// without --electrum.
func TestElectrumRefusesAnIndexWithoutItsColumns(t *testing.T) {
	blk := writeDemoBlocks(t, 20)
	data := t.TempDir()
	if _, stderr, err := run(t, "import", "--index", "--network", "regtest", "--data", data, "--quiet", blk); err != nil {
		t.Fatalf("import: %v\n%s", err, stderr)
	}
	db, err := pebble.Open(filepath.Join(data, "index"), &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Delete([]byte{0x10}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := run(t, "serve", "--index", "--data", data, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--electrum", "127.0.0.1:0")
	if err == nil {
		t.Fatal("serve --electrum started on an index without the Electrum columns")
	}
	mustContain(t, "the refusal", stderr, "built before its Electrum columns existed", "utxostore import --index --data "+data)
	d := startDaemon(t, "serve", "--index", "--data", data, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
	if code, body := httpGet(t, "http://"+d.http+"/api/v2/block/19"); code != 200 {
		t.Errorf("without --electrum the index is served: %d %s", code, body)
	}
}
