package index

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A large bulk flush hands Pebble its table and keeps no file of its own. A
// table a flush wrote when the process stopped before Pebble took it in is
// removed by Open, and the index is that of the flushes before it.
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
	table := filepath.Join(dir, ingestFile)
	if _, err := os.Stat(table); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after the bulk import's flushes %s is there (%v)", ingestFile, err)
	}
	want := dumpAll(t, ix)

	// The next blocks' table, written and never taken in.
	held := &bulkWrites{ix: ix}
	win := ix.win
	for _, b := range chain[30:] {
		if err := ix.connect(newWorkset(ix), held, &win, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := held.writeTable(table); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix = openTest(t, dir, Options{NoSync: true})
	defer ix.Close()
	if _, err := os.Stat(table); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open left the unused %s (%v)", ingestFile, err)
	}
	if d := diffColumns(want, dumpAll(t, ix)); d != "" {
		t.Fatalf("the index changed:\n%s", d)
	}
	if tip, ok, err := ix.BestBlock(); err != nil || !ok || tip.Height != chain[29].Height {
		t.Fatalf("tip %+v (%v, %v), want block %d", tip, ok, err, chain[29].Height)
	}
}
