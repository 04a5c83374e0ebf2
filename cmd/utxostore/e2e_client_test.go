package main

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/wire"
)

// writeDemoBlocks writes the first blocks of demo's synthetic chain (seed
// 1) as a regtest blk*.dat file and returns its path: the blocks are mined
// at regtest's difficulty, so they pass the checks of a store opened with
// --network regtest.
func writeDemoBlocks(t *testing.T, blocks int) string {
	t.Helper()
	gen := newDemoChain(1)
	var file bytes.Buffer
	for _, b := range gen.build(blocks) {
		file.Write(binary.LittleEndian.AppendUint32(nil, uint32(wire.TestNet)))
		file.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(b.Raw))))
		file.Write(b.Raw)
	}
	path := filepath.Join(t.TempDir(), "blk00000.dat")
	writeFile(t, path, file.String())
	return path
}

// finalLine is the last non-empty line of out.
func finalLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

// TestImportThroughTheDaemonPrintsTheSummary: `import --server` and
// `client import` end with the summary line a direct import prints.
func TestImportThroughTheDaemonPrintsTheSummary(t *testing.T) {
	blk := writeDemoBlocks(t, 130)
	direct, stderr, err := run(t, "import", "--network", "regtest", "--data", t.TempDir(), "--quiet", blk)
	if err != nil {
		t.Fatalf("direct import: %v\n%s", err, stderr)
	}
	want := finalLine(direct)
	if !strings.Contains(want, `"blocks":130`) {
		t.Fatalf("direct import: want a summary of 130 blocks, got %q", want)
	}
	for _, args := range [][]string{{"import", "--quiet", "--server"}, {"client"}} {
		d := startDaemon(t, "serve", "--create", "--network", "regtest", "--data", t.TempDir(), "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
		cmd := append(append([]string{}, args...), d.grpc, blk)
		if args[0] == "client" {
			cmd = []string{"client", "--server", d.grpc, "--quiet", "import", blk}
		}
		out, stderr, err := run(t, cmd...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", cmd, err, stderr)
		}
		if got := finalLine(out); got != want {
			t.Errorf("%s through the daemon: want the direct import's summary line\n%s\ngot\n%s", args[0], want, got)
		}
	}
}

// TestClientOverTLS: `client` and `import --server` reach a daemon serving
// TLS with a generated certificate, given its CA file; without it, or with
// a name the certificate does not hold, they are refused.
func TestClientOverTLS(t *testing.T) {
	certFile, keyFile, _ := selfSigned(t)
	blk := writeDemoBlocks(t, 3)
	d := startDaemon(t, "serve", "--engine", "memory", "--network", "regtest", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0",
		"--tls-cert", certFile, "--tls-key", keyFile)

	out, stderr, err := run(t, "client", "--server", d.grpc, "--tls-ca", certFile, "health")
	if err != nil || !strings.Contains(out, `"Engine": "memory"`) {
		t.Fatalf("client health over TLS: %v\n%s%s", err, out, stderr)
	}
	out, stderr, err = run(t, "import", "--quiet", "--server", d.grpc, "--tls-ca", certFile, blk)
	if err != nil || !strings.Contains(finalLine(out), `"blocks":3`) {
		t.Fatalf("import --server over TLS: %v\n%s%s", err, out, stderr)
	}
	out, stderr, err = run(t, "client", "--server", d.grpc, "--tls-ca", certFile, "--tls-server-name", "127.0.0.1", "health")
	if err != nil {
		t.Errorf("client health with --tls-server-name 127.0.0.1: %v\n%s%s", err, out, stderr)
	}
	for _, refused := range [][]string{
		{"client", "--server", d.grpc, "health"},
		{"client", "--server", d.grpc, "--tls", "health"},
		{"client", "--server", d.grpc, "--tls-ca", certFile, "--tls-server-name", "elsewhere.example", "health"},
		{"import", "--quiet", "--server", d.grpc, blk},
	} {
		if out, stderr, err := run(t, refused...); err == nil {
			t.Errorf("%v: want a refusal, got\n%s%s", refused, out, stderr)
		}
	}
}
