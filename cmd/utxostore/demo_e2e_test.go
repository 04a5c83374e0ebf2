package main

import "testing"

// TestDemoSurvivesItsReorganisation: demo's chain, which replaces a stale
// block on its way, leaves the store a direct import of the same blocks
// leaves, on regtest, checked as any regtest block is.
func TestDemoSurvivesItsReorganisation(t *testing.T) {
	demo, stderr, err := run(t, "demo", "--data", t.TempDir(), "--blocks", "130", "--exit-after-seed")
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, stderr)
	}
	mustContain(t, "demo's log", stderr, "reorganised=true", "network=regtest")
	direct, stderr, err := run(t, "import", "--network", "regtest", "--data", t.TempDir(), "--quiet", writeDemoBlocks(t, 130))
	if err != nil {
		t.Fatalf("import: %v\n%s", err, stderr)
	}
	if finalLine(demo) != finalLine(direct) {
		t.Fatalf("demo after its reorganisation:\n%s\na direct import of its chain:\n%s", finalLine(demo), finalLine(direct))
	}
}
