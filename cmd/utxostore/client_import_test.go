package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
)

// TestImportThroughADaemonRefusesAFork imports blocks into a daemon, then
// a file whose block at the daemon's tip height is another one: the import
// must refuse it as another chain, rather than take the daemon's tip for
// that block, and leave the store as it was.
func TestImportThroughADaemonRefusesAFork(t *testing.T) {
	chainFile := chainPrefix(t, 100)
	data, err := os.ReadFile(chainFile)
	if err != nil {
		t.Fatal(err)
	}
	// The same blocks with another nonce in the last header: another block
	// at the tip's height, on the same parent.
	last := 0
	for end := 0; end < len(data); end += 8 + int(binary.LittleEndian.Uint32(data[end+4:])) {
		last = end
	}
	fork := append([]byte(nil), data...)
	fork[last+8+76]++
	forkFile := filepath.Join(t.TempDir(), "fork.blk")
	if err := os.WriteFile(forkFile, fork, 0o644); err != nil {
		t.Fatal(err)
	}

	store := []string{"--engine", "pebble", "--data", filepath.Join(t.TempDir(), "data")}
	d := startDaemon(t, append([]string{"serve", "--create", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"}, store...)...)
	if _, stderr, err := run(t, "import", "--server", d.grpc, "--quiet", chainFile); err != nil {
		t.Fatalf("import: %v\n%s", err, stderr)
	}
	_, stderr, err := run(t, "import", "--server", d.grpc, "--quiet", forkFile)
	mustContain(t, "importing a fork of the daemon's tip", stderr,
		"holds block "+lastBlockHash(t, chainFile).String()+" at height 99", "this file has "+lastBlockHash(t, forkFile).String()+" there: it holds another chain")
	if err == nil {
		t.Fatal("the import of a fork succeeded")
	}
	if _, stderr, err := run(t, "import", "--server", d.grpc, "--quiet", chainFile); err != nil {
		t.Fatalf("importing the daemon's own chain again: %v\n%s", err, stderr)
	}
	d.stop(t, syscall.SIGTERM)
	if got, want := lastLine(t, append([]string{"info"}, store...)...), lastLine(t, "import", "--engine", "memory", "--quiet", chainFile); got != want {
		t.Fatalf("after the refused fork:\n%s\nwant\n%s", got, want)
	}
}

// lastBlockHash is the hash of the last block of a blk*.dat file.
func lastBlockHash(t *testing.T, path string) chainhash.Hash {
	t.Helper()
	return lastBlockOf(t, path).BlockHash()
}

// lastBlockOf is the last block of a blk*.dat file.
func lastBlockOf(t *testing.T, path string) *wire.MsgBlock {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var last []byte
	for len(data) >= 8 {
		n := int(binary.LittleEndian.Uint32(data[4:]))
		if n < 80 || 8+n > len(data) {
			t.Fatal(fmt.Errorf("%s: a frame of %d bytes", path, n))
		}
		last, data = data[8:8+n], data[8+n:]
	}
	var b wire.MsgBlock
	if err := b.Deserialize(bytes.NewReader(last)); err != nil {
		t.Fatal(err)
	}
	return &b
}
