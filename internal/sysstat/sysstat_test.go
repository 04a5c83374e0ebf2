package sysstat

import (
	"os"
	"path/filepath"
	"testing"
)

// Bytes written and synced in a directory show in its device's count,
// whatever else writes to the device meanwhile (which can only add).
func TestDeviceWritesCountWhatReachesTheDevice(t *testing.T) {
	dir := t.TempDir()
	before, ok := DeviceWrites(dir)
	if !ok {
		t.Skipf("no block device under %s (tmpfs or overlay?)", dir)
	}
	const size = 4 << 20
	if err := os.WriteFile(filepath.Join(dir, "data"), make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	after, ok := DeviceWrites(dir)
	if !ok {
		t.Fatal("the device's count could be read once, not twice")
	}
	if after-before < size {
		t.Fatalf("the device wrote %d bytes for a %d-byte file", after-before, size)
	}
}
