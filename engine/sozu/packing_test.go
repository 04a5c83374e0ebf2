package sozu

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/utxostore/utxostore/engine"
)

// childKey makes key n whose hash falls in child c of the single layer-0
// bucket of spillOptions (the hash's top 3 bits pick the child).
func childKey(n, c uint64) engine.Key { return mkKey(n, c<<61|n<<20) }

// runsOf returns the distinct runs of a layer.
func runsOf(tb *table, layer uint8) map[*run]bool {
	runs := map[*run]bool{}
	for a := range tb.pages.dir {
		if a.layer() == layer {
			runs[tb.pages.runAt(a)] = true
		}
	}
	return runs
}

// A spill that feeds several sparse children writes them onto one shared
// page: a child with an entry or two does not cost a page of its own.
func TestSparseSiblingsShareAPage(t *testing.T) {
	tb := newTestTable(t, spillOptions())
	for n := uint64(0); n < 11; n++ {
		mustPut(t, tb, childKey(n, n%8), engine.Terms{ProducedAt: uint32(n)})
	}
	if !tb.layer0[0].hasChildren {
		t.Fatal("the overflowing bucket did not spill")
	}
	if err := tb.trimPending(0); err != nil {
		t.Fatal(err)
	}
	writes := tb.pages.pageWrites
	if err := tb.flush(); err != nil {
		t.Fatal(err)
	}
	children := 0
	for a := range tb.pages.dir {
		if a.layer() == 1 {
			children++
		}
	}
	if children < 4 {
		t.Fatalf("the spill reached only %d children; the test needs several", children)
	}
	if got := tb.pages.pageWrites - writes; got != 1 || tb.pages.npages != 1 || len(runsOf(tb, 1)) != 1 {
		t.Fatalf("%d sparse children written with %d page writes into %d pages and %d runs, want 1 of each",
			children, got, tb.pages.npages, len(runsOf(tb, 1)))
	}
	// Every entry reads back from the shared page (the cache is empty
	// after the flush).
	for n := uint64(0); n < 11; n++ {
		k := childKey(n, n%8)
		if _, found, err := tb.lookup(&k); err != nil || !found {
			t.Fatalf("key %d: found %v, err %v", n, found, err)
		}
	}
}

// Siblings that fill up leave the shared page: no run is larger than a
// page unless it holds a single bucket, a changed bucket that has a run of
// its own is rewritten alone, and nothing is lost on the way.
func TestFillingSiblingsSplitIntoRunsOfTheirOwn(t *testing.T) {
	o := spillOptions()
	size := (&entry{value: make([]byte, 20)}).encodedSize()
	o.Capacity = []int{10 * size, 60 * size}
	o.FlowRatio = []float64{0.5, 0.9}
	tb := newTestTable(t, o)
	const n = 400
	for i := uint64(0); i < n; i++ {
		mustPut(t, tb, childKey(i, i%8), engine.Terms{ProducedAt: uint32(i)})
		if i%25 == 0 {
			settle(t, tb)
		}
	}
	settle(t, tb)
	checkSparseIndex(t, tb.pages)
	runs := runsOf(tb, 1)
	if len(runs) < 2 {
		t.Fatalf("%d runs for %d bytes of children", len(runs), tb.layers[1].bytes)
	}
	for r := range runs {
		if len(r.members()) > 1 && r.size > pagePayload {
			t.Fatalf("run of %d buckets takes %d bytes, more than a page", len(r.members()), r.size)
		}
	}
	for i := uint64(0); i < n; i++ {
		k := childKey(i, i%8)
		if _, found, err := tb.lookup(&k); err != nil || !found {
			t.Fatalf("key %d: found %v, err %v", i, found, err)
		}
	}

	// Change one entry of a child whose run is its own: only that run is
	// written, and its siblings keep their pages.
	var alone *run
	for r := range runs {
		if len(r.members()) == 1 && r.size > sparseRun {
			alone = r
		}
	}
	if alone == nil {
		t.Fatal("no child fills a run of its own")
	}
	// Its run is released once rewritten: keep what the checks need.
	aloneIndex, alonePages := alone.members()[0], len(alone.pages())
	before := map[bucketAddr]run{}
	for a := range tb.pages.dir {
		before[a] = *tb.pages.runAt(a)
	}
	child, err := tb.load(1, aloneIndex)
	if err != nil {
		t.Fatal(err)
	}
	e := child.entries[0]
	e.terms.Consumed = true
	child.replace(0, e)
	tb.markDirty(1, aloneIndex)
	writes := tb.pages.pageWrites
	if err := tb.flush(); err != nil {
		t.Fatal(err)
	}
	if got := tb.pages.pageWrites - writes; got != uint64(alonePages) {
		t.Fatalf("changing one bucket wrote %d pages, want its run's %d", got, alonePages)
	}
	for a := range tb.pages.dir {
		if r := tb.pages.runAt(a); a.index() != aloneIndex && !reflect.DeepEqual(before[a], *r) {
			t.Fatalf("sibling %v was rewritten: %+v, now %+v", a, before[a], *r)
		}
	}
	checkSparseIndex(t, tb.pages)
}

// A run whose stream does not hold the buckets the directory expects is
// reported as corruption, not read as another bucket's data.
func TestRunHoldingOtherBucketsIsCorrupt(t *testing.T) {
	tb := newTestTable(t, spillOptions())
	for n := uint64(0); n < 11; n++ {
		mustPut(t, tb, childKey(n, n%8), engine.Terms{ProducedAt: uint32(n)})
	}
	settle(t, tb)
	for r := range runsOf(tb, 1) {
		r.members()[0]++ // the directory now disagrees with the page
		_, err := tb.pages.read(addrOf(1, r.members()[0]))
		var corrupt *engine.CorruptionError
		if !errors.As(err, &corrupt) {
			t.Fatalf("read of a run holding other buckets: %v", err)
		}
	}
}

// A store whose checkpoint an earlier or a later release wrote is refused
// with a message that says what to do, not reported as damage, and left
// as it was.
func TestCheckpointOfAnotherFormatIsRefused(t *testing.T) {
	version := checkpointMagic[len(checkpointFamily)]
	for _, c := range []struct{ magic, says string }{
		{checkpointFamily + string(version-1), "earlier release"},
		{checkpointFamily + string(version+1), "later release"},
	} {
		t.Run(c.magic, func(t *testing.T) {
			dir := t.TempDir()
			o := tinyOptions()
			e := openFor(t, dir, o)
			putN(t, e, 0, 100, 20)
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			ckpts, _ := filepath.Glob(filepath.Join(dir, "shard-00.ckpt.*"))
			if len(ckpts) != 1 {
				t.Fatalf("checkpoints of shard 0: %v", ckpts)
			}
			data, err := os.ReadFile(ckpts[0])
			if err != nil {
				t.Fatal(err)
			}
			original := slices.Clone(data)
			copy(data, c.magic)
			if err := os.WriteFile(ckpts[0], data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = Open(dir, o)
			var corrupt *engine.CorruptionError
			var format *FormatError
			if !errors.As(err, &format) || errors.As(err, &corrupt) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("open of a store with checkpoint %q: %v, want a refusal naming the %s", c.magic, err, c.says)
			}
			t.Logf("refused: %v", err)
			if after, _ := os.ReadFile(ckpts[0]); !bytes.Equal(after, data) {
				t.Fatal("the refused open changed the checkpoint")
			}
			// Put back, the checkpoint opens with every record.
			if err := os.WriteFile(ckpts[0], original, 0o644); err != nil {
				t.Fatal(err)
			}
			e = openFor(t, dir, o)
			defer e.Close()
			expectPutN(t, e, 100, 20)
		})
	}
}

// A manifest of another format is refused with a FormatError, not
// reported as damage, and left as it was.
func TestManifestOfAnotherFormatIsRefused(t *testing.T) {
	dir := t.TempDir()
	e := openFor(t, dir, tinyOptions())
	putN(t, e, 0, 100, 20)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, manifestName)
	original, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	later := slices.Clone(original)
	copy(later, checkpointFamily+"3")
	if err := os.WriteFile(path, later, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, tinyOptions())
	var format *FormatError
	var corrupt *engine.CorruptionError
	if !errors.As(err, &format) || errors.As(err, &corrupt) || !strings.Contains(err.Error(), "later release") {
		t.Fatalf("open with a manifest of format %q: %v, want a FormatError naming a later release", later[:len(manifestMagic)], err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, later) {
		t.Fatal("the refused open changed the manifest")
	}
	if err := os.WriteFile(path, original, 0o644); err != nil {
		t.Fatal(err)
	}
	e = openFor(t, dir, tinyOptions())
	defer e.Close()
	expectPutN(t, e, 100, 20)
}

// checkSparseIndex verifies the page store's list of sparse runs per span
// against the runs themselves.
func checkSparseIndex(t *testing.T, s *pageStore) {
	t.Helper()
	want := map[*run]bool{}
	s.runs(func(r *run) error {
		if r.size <= sparseRun {
			want[r] = true
		}
		return nil
	})
	listed := 0
	for span, list := range s.sparse {
		for _, id := range list {
			if r := s.arena.at(id); !want[r] || r.span() != span {
				t.Fatalf("span %v lists a run that is gone, not sparse or elsewhere: %+v", span, s.arena.at(id))
			}
			listed++
		}
	}
	if listed != len(want) {
		t.Fatalf("%d sparse runs listed, %d exist", listed, len(want))
	}
}

// The directory names runs by id; a *run must stay valid while the arena
// grows, and a released id is handed out again only after its release.
func TestRunArenaKeepsRunsInPlace(t *testing.T) {
	var a runArena
	first := a.alloc()
	first.layer, first.size = 2, 77
	firstID := first.id
	if firstID == 0 {
		t.Fatal("the arena handed out id 0, which the directory reads as no run")
	}
	held := map[runID]*run{firstID: first}
	for len(held) < 3*runChunk {
		r := a.alloc()
		if held[r.id] != nil {
			t.Fatalf("id %d handed out twice", r.id)
		}
		r.size = int(r.id)
		held[r.id] = r
	}
	if first != a.at(firstID) || first.layer != 2 || first.size != 77 {
		t.Fatalf("the first run moved or changed as the arena grew: %+v", *a.at(firstID))
	}
	for id, r := range held {
		if id != firstID && (a.at(id) != r || r.size != int(id)) {
			t.Fatalf("run %d moved or changed", id)
		}
	}
	a.release(first)
	if reused := a.alloc(); reused.id != firstID || reused.size != 0 || reused.layer != 0 {
		t.Fatalf("after a release the arena handed out %+v, want id %d zeroed", *reused, firstID)
	}
}
