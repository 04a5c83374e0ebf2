package main

import (
	"encoding/json"
	"path/filepath"
	"syscall"
	"testing"
)

// TestBackupOfADaemonServedWithoutTheIndexKeepsTheIndex: a data directory
// whose address index and block store were built (demo --index) and which
// is then served without --index is backed up whole: the copy holds the
// index and the block store as the data directory holds them, and `serve
// --index --data COPY` opens it with every store at the backup's block.
// The backup once copied only the stores the daemon had open, so the copy
// had no index and no block store, and its index had to be rebuilt from
// the first block.
func TestBackupOfADaemonServedWithoutTheIndexKeepsTheIndex(t *testing.T) {
	data := seedIndexedStore(t)
	copyDir := filepath.Join(t.TempDir(), "copy")
	listen := []string{"--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"}
	src := startDaemon(t, append([]string{"serve", "--data", data}, listen...)...)
	stdout, stderr, err := run(t, "backup", "--server", src.grpc, copyDir)
	if err != nil {
		t.Fatalf("backup: %v\n%s", err, stderr)
	}
	if err := src.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, src.log())
	}
	var b backupLine
	if err := json.Unmarshal([]byte(finalLine(stdout)), &b); err != nil {
		t.Fatalf("backup printed %q: %v", stdout, err)
	}
	for _, name := range []string{"index", "blocks"} {
		sameFiles(t, filepath.Join(data, name), filepath.Join(copyDir, name))
	}
	serveCopy(t, copyDir, b, listen)
}

// seedIndexedStore creates a small mainnet store on sozu with its address
// index and block store, with demo, in a new data directory.
func seedIndexedStore(t *testing.T) string {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	_, stderr, err := run(t, "demo", "--index", "--network", "mainnet", "--data", data, "--blocks", "20", "--exit-after-seed")
	if err != nil {
		t.Fatalf("demo --index: %v\n%s", err, stderr)
	}
	return data
}
