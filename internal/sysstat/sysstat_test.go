package sysstat

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
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
	mustCountAFile(t, dir, before)
}

// A directory created after the first reading, as a store creates its
// data directory when it opens, is measured on the device it is created
// on: both readings succeed and count what was written in it.
func TestDeviceWritesOfADirectoryCreatedBetweenTheReadings(t *testing.T) {
	parent := t.TempDir()
	if _, ok := DeviceWrites(parent); !ok {
		t.Skipf("no block device under %s (tmpfs or overlay?)", parent)
	}
	dir := filepath.Join(parent, "store", "data")
	before, ok := DeviceWrites(dir)
	if !ok {
		t.Fatalf("no reading for %s, not created yet, though %s has its device's", dir, parent)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mustCountAFile(t, dir, before)
}

// mustCountAFile writes a 4 MiB file into dir and fails unless the
// device's count, read before as before, grew by at least as much.
func mustCountAFile(t *testing.T, dir string, before int64) {
	t.Helper()
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

// peakRSSChildEnv makes this test binary, re-executed, print its PeakRSS.
const peakRSSChildEnv = "SYSSTAT_PEAK_RSS_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(peakRSSChildEnv) == "1" {
		fmt.Println(PeakRSS())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A process started by a large one reports its own peak, not its
// parent's: the benchmark runs each engine in a child of the process that
// generated the workload.
func TestPeakRSSIsNotInheritedAcrossExec(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("PeakRSS reads Linux's accounting")
	}
	const big = 512 << 20
	held := make([]byte, big)
	for i := range held {
		held[i] = 1 // resident
	}
	if own := PeakRSS(); own < big {
		t.Fatalf("this process holds %d MiB but reports a peak of %d MiB", big>>20, own>>20)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), peakRSSChildEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatalf("child printed %q: %v", out, err)
	}
	if child == 0 || child >= big/2 {
		t.Errorf("a child that holds next to nothing reports a peak of %d MiB (its parent holds %d MiB)", child>>20, big>>20)
	}
	runtime.KeepAlive(held)
}
