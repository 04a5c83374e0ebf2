package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestBackupRemovesWhatAKilledBackupLeft: a daemon killed while it copies
// a backup leaves the copy's temporary directory, DIR.tmp-<digits>, beside
// DIR; the next backup into DIR removes it, and leaves alone another
// target's and names of another pattern. Such directories used to stay
// until someone removed them by hand, each holding up to a whole copy of
// the store's disk.
//
// Nothing in a backup waits on anything a test can hold between making
// its temporary directory and renaming it, so the leftover is made here
// as a kill leaves it: the same name, holding part of a copy.
func TestBackupRemovesWhatAKilledBackupLeft(t *testing.T) {
	data := seedIndexedStore(t)
	parent := t.TempDir()
	copyDir := filepath.Join(parent, "copy")
	killed := filepath.Join(parent, "copy.tmp-123")
	others := []string{filepath.Join(parent, "copy2.tmp-456"), filepath.Join(parent, "copy.tmp-kept")}
	for _, dir := range append([]string{killed}, others...) {
		if err := os.MkdirAll(filepath.Join(dir, "blobs"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "ENGINE"), []byte("sozu\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := startDaemon(t, "serve", "--data", data, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
	_, stderr, err := run(t, "backup", "--server", src.grpc, copyDir)
	if err != nil {
		t.Fatalf("backup: %v\n%s\ndaemon:\n%s", err, stderr, src.log())
	}
	if err := src.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, src.log())
	}
	if _, err := os.Stat(killed); !os.IsNotExist(err) {
		t.Errorf("what the killed backup left, after a backup into %s: %v", copyDir, err)
	}
	for _, dir := range others {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("another target's directory: %v", err)
		}
	}
	if _, stderr, err := run(t, "info", "--data", copyDir); err != nil {
		t.Fatalf("info of the copy: %v\n%s", err, stderr)
	}
}
