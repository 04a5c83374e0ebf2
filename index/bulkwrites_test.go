package index

import (
	"path/filepath"
	"slices"
	"testing"
)

// A large bulk flush hands Pebble its tables and keeps no file of its own.
// Tables a flush wrote when the process stopped before Pebble took them in
// are removed by Open, and the index is that of the flushes before it.
func TestABulkFlushLeavesNoTableBehind(t *testing.T) {
	chain := genChain(5, 40)
	dir := t.TempDir()
	ix := openTest(t, dir, Options{NoSync: true})
	bk, err := ix.BeginBulk(10)
	if err != nil {
		t.Fatal(err)
	}
	bk.held.tableBytes = 1 // every flush a table
	for _, b := range chain[:30] {
		if err := bk.Connect(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := bk.Close(); err != nil {
		t.Fatal(err)
	}
	if ix.ingestedBytes == 0 {
		t.Fatal("the bulk import's flushes wrote no table")
	}
	if left := flushTables(t, dir); len(left) != 0 {
		t.Fatalf("after the bulk import's flushes %v are there", left)
	}
	want := dumpAll(t, ix)

	// The next blocks' tables, written and never taken in.
	held := &bulkWrites{ix: ix, tables: 3}
	win := ix.win
	for _, b := range chain[30:] {
		if err := ix.connect(newWorkset(ix), held, &win, b); err != nil {
			t.Fatal(err)
		}
	}
	tables, err := held.writeTables(dir)
	if err != nil {
		t.Fatal(err)
	}
	if left := flushTables(t, dir); len(tables) < 2 || !slices.Equal(left, tables) {
		t.Fatalf("the flush wrote %v, and %v are there; want several tables", tables, left)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix = openTest(t, dir, Options{NoSync: true})
	defer ix.Close()
	if left := flushTables(t, dir); len(left) != 0 {
		t.Fatalf("Open left the unused %v", left)
	}
	if d := diffColumns(want, dumpAll(t, ix)); d != "" {
		t.Fatalf("the index changed:\n%s", d)
	}
	if tip, ok, err := ix.BestBlock(); err != nil || !ok || tip.Height != chain[29].Height {
		t.Fatalf("tip %+v (%v, %v), want block %d", tip, ok, err, chain[29].Height)
	}
}

// flushTables lists the bulk flush tables in dir.
func flushTables(t *testing.T, dir string) []string {
	t.Helper()
	left, err := filepath.Glob(filepath.Join(dir, ingestFileGlob))
	if err != nil {
		t.Fatal(err)
	}
	return left
}
