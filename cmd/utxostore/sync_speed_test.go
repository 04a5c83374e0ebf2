package main

import (
	"testing"
	"time"
)

// TestSyncCatchUpSpeed measures catch-up from a local btcd against import
// of the same blocks, in one run, for BENCHMARKS.md:
//
//	go test ./cmd/utxostore -run TestSyncCatchUpSpeed -long -v -timeout 30m
//
// Both end with the same summary line (checked), and both are timed as the
// whole command: open, every block, the summary walk, close.
func TestSyncCatchUpSpeed(t *testing.T) {
	if !*long {
		t.Skip("a measurement: run with -long")
	}
	_, node := minedNode(t, "speed", 1900)
	files := node.WriteChain(t, t.TempDir())
	for _, mode := range []string{"block", "always"} {
		start := time.Now()
		imported := lastLine(t, append([]string{"import", "--quiet", "--network", "simnet", "--sync", mode, "--data", t.TempDir()}, files...)...)
		importTime := time.Since(start)
		start = time.Now()
		synced := lastLine(t, "sync", "--quiet", "--stop-at-tip", "--network", "simnet", "--sync", mode, "--data", t.TempDir(), "--peer", node.P2P)
		syncTime := time.Since(start)
		if synced != imported {
			t.Fatalf("--sync %s: sync ends with\n%s\nimport with\n%s", mode, synced, imported)
		}
		s := parseSummary(t, synced)
		t.Logf("--sync %s: %d blocks, %d txs: import %.2fs, sync --peer %.2fs: sync/import time %.2f",
			mode, s.Blocks, s.Txs, importTime.Seconds(), syncTime.Seconds(), syncTime.Seconds()/importTime.Seconds())
	}
}
