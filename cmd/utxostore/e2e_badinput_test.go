package main

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/utxostore/utxostore/client"
	pb "github.com/utxostore/utxostore/proto/utxostorepb"
)

// TestServeRefusesBadInput seeds a small synthetic store with demo, serves
// it with a token and a batch limit of 2, and sends every kind of bad
// request: each is refused with a clear message and changes nothing.
func TestServeRefusesBadInput(t *testing.T) {
	data := t.TempDir()
	if _, stderr, err := run(t, "demo", "--data", data, "--blocks", "120", "--exit-after-seed"); err != nil {
		t.Fatalf("demo: %v\n%s", err, stderr)
	}
	d := startDaemon(t, "serve", "--data", data, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0",
		"--token", "s3cret", "--max-batch", "2", "--max-body", "1024")
	base := "http://" + d.http

	for _, c := range []struct {
		path string
		code int
		want string
	}{
		{"/api/v2/tx/nothex", 400, "malformed txid"},
		{"/api/v2/tx/" + strings.Repeat("ab", 31), 400, "malformed txid"},
		// Blockbook answers what it does not know with 400 too.
		{"/api/v2/tx/" + strings.Repeat("ab", 32), 400, "not found"},
		{"/api/v2/block/x", 400, "malformed block height"},
		{"/api/v2/block/5000", 400, "not found"},
	} {
		code, body := httpGetToken(t, base+c.path, "s3cret")
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("GET %s: want %d %q, got %d %s", c.path, c.code, c.want, code, body)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/api/status", strings.NewReader(strings.Repeat("x", 2048)))
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("2 KiB body with --max-body 1024: want 413, got %d", resp.StatusCode)
	}

	ctx := context.Background()
	anonymous, _ := client.Dial(d.grpc, client.Options{})
	wrong, _ := client.Dial(d.grpc, client.Options{Token: "guess"})
	authorized, _ := client.Dial(d.grpc, client.Options{Token: "s3cret"})
	for _, c := range []*client.Client{anonymous, wrong, authorized} {
		defer c.Close()
	}
	before, err := anonymous.BlockHeight(ctx)
	if err != nil {
		t.Fatalf("a read needs no token: %v", err)
	}
	expectCode(t, "SetBlockHeight without a token", anonymous.SetBlockHeight(ctx, 1), codes.Unauthenticated, "Bearer")
	expectCode(t, "SetBlockHeight with a wrong token", wrong.SetBlockHeight(ctx, 1), codes.Unauthenticated, "wrong bearer token")
	_, err = authorized.Stub().Create(ctx, &pb.CreateRequest{Tx: []byte{1, 2, 3}})
	expectCode(t, "Create of malformed bytes", err, codes.InvalidArgument, "transaction")
	_, err = authorized.Stub().ConnectBlock(ctx, &pb.ConnectBlockRequest{Block: []byte("not a block"), Height: 120})
	expectCode(t, "ConnectBlock of malformed bytes", err, codes.InvalidArgument, "block")
	_, err = authorized.GetBatch(ctx, make([]chainhash.Hash, 3))
	expectCode(t, "a batch of 3 with --max-batch 2", err, codes.InvalidArgument, "batch limit of 2")
	_, err = authorized.Stub().Create(ctx, &pb.CreateRequest{Tx: make([]byte, 65<<20)})
	expectCode(t, "a 65 MiB message", err, codes.ResourceExhausted, "")
	if after, _ := anonymous.BlockHeight(ctx); after != before {
		t.Errorf("refused requests changed the height from %d to %d", before, after)
	}
}

func expectCode(t *testing.T, what string, err error, want codes.Code, msg string) {
	t.Helper()
	if status.Code(err) != want || !strings.Contains(err.Error(), msg) {
		t.Errorf("%s: want %v containing %q, got %v", what, want, msg, err)
	}
}

// TestServeRefusesToStart checks the configurations serve must refuse,
// each with the reason.
func TestServeRefusesToStart(t *testing.T) {
	data := t.TempDir()
	if _, stderr, err := run(t, "demo", "--data", data, "--blocks", "3", "--exit-after-seed"); err != nil {
		t.Fatalf("demo: %v\n%s", err, stderr)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"non-loopback without a token", []string{"--grpc", "0.0.0.0:0"}, "needs a bearer token"},
		{"half a TLS pair", []string{"--tls-cert", "cert.pem"}, "both --tls-cert and --tls-key"},
		{"another network's data", []string{"--network", "testnet"}, "network"},
		{"an unknown engine", []string{"--engine", "nosuch"}, "unknown engine"},
	} {
		args := append([]string{"serve", "--data", data, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"}, c.args...)
		_, stderr, err := run(t, args...)
		if err == nil || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: want a refusal mentioning %q, got %v:\n%s", c.name, c.want, err, stderr)
		}
	}
}

// TestConfigSources checks precedence flags > env > file > defaults and
// that `utxostore config` names each value's source.
func TestConfigSources(t *testing.T) {
	file := t.TempDir() + "/utxostore.json"
	writeFile(t, file, `{"max-batch": 7, "http": "127.0.0.1:9001", "grpc": "127.0.0.1:9002"}`)
	cmdEnv := []string{"UTXOSTORE_HTTP=127.0.0.1:9003", "UTXOSTORE_TOKEN=hidden-value", "UTXOSTORE_DISCARD_CORRUPT_LOG=true"}
	out, stderr, err := runEnv(t, cmdEnv, "config", "--config", file, "--grpc", "127.0.0.1:9004")
	if err != nil {
		t.Fatalf("config: %v\n%s", err, stderr)
	}
	for _, want := range []string{
		"grpc ", "127.0.0.1:9004", "flag",
		"127.0.0.1:9003", "env UTXOSTORE_HTTP",
		"max-batch", "file " + file,
		"shutdown-timeout", "default",
		"(set, hidden)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("config output: want %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hidden-value") {
		t.Errorf("config printed the token:\n%s", out)
	}
	// A salvage is for one run: the environment does not set it, and a
	// config file that names it is refused.
	if !regexp.MustCompile(`(?m)^discard-corrupt-log\s+false\s+default$`).MatchString(out) {
		t.Errorf("UTXOSTORE_DISCARD_CORRUPT_LOG set --discard-corrupt-log:\n%s", out)
	}
	writeFile(t, file, `{"discard-corrupt-log": true}`)
	if _, stderr, err := run(t, "config", "--config", file); err == nil || !strings.Contains(stderr, "command line only") {
		t.Errorf("discard-corrupt-log in a config file: want a refusal, got %v %s", err, stderr)
	}
	writeFile(t, file, `{"no-such-setting": 1}`)
	if _, stderr, err := run(t, "config", "--config", file); err == nil || !strings.Contains(stderr, "unknown setting") {
		t.Errorf("unknown setting: want a refusal, got %v %s", err, stderr)
	}
}
