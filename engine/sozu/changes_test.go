package sozu

import (
	"testing"

	"github.com/utxostore/utxostore/engine"
)

// What a spill hands its children waits in memory until it is worth a
// page write; reads see it all the while, and applying it leaves the same
// table as writing it at once.
func TestSpillIsBufferedUntilWorthAPage(t *testing.T) {
	tb := newTestTable(t, spillOptions())
	for n := uint64(0); n < 11; n++ {
		mustPut(t, tb, childKey(n, n%8), engine.Terms{ProducedAt: uint32(n)})
	}
	if !tb.layer0[0].hasChildren || len(tb.pending) == 0 {
		t.Fatalf("the spill buffered changes for %d children", len(tb.pending))
	}
	if err := tb.flush(); err != nil {
		t.Fatal(err)
	}
	if tb.pages.pageWrites != 0 || tb.pages.pageReads != 0 {
		t.Fatalf("a spill of a few entries cost %d page writes and %d reads", tb.pages.pageWrites, tb.pages.pageReads)
	}
	flowed := tb.layers[1].entries
	for n := uint64(0); n < 11; n++ {
		k := childKey(n, n%8)
		v, err := tb.get([]engine.Key{k}, 0)
		if err != nil || v[0] == nil {
			t.Fatalf("key %d unreadable while buffered: %v", n, err)
		}
	}
	settle(t, tb)
	if tb.layers[1].entries != flowed || tb.pages.pageWrites != 1 {
		t.Fatalf("applying %d buffered entries left %d in layer 1 with %d page writes", flowed, tb.layers[1].entries, tb.pages.pageWrites)
	}
}

// A bucket's changes are applied once they fill a quarter page, without
// waiting for the memory budget.
func TestChangesAreAppliedAtTheThreshold(t *testing.T) {
	o := spillOptions()
	size := (&entry{value: make([]byte, 20)}).encodedSize()
	o.Capacity = []int{10 * size, 100 * size}
	tb := newTestTable(t, o)
	// Every key falls in child 0, so all the flow buffers there.
	n := uint64(0)
	for tb.layers[1].entries*int64(size) < applyThreshold {
		mustPut(t, tb, childKey(n, 0), engine.Terms{ProducedAt: uint32(n)})
		n++
	}
	if c := tb.pending[bucketAddr{1, 0}]; c != nil && c.bytes() >= applyThreshold {
		t.Fatalf("changes of %d bytes still buffered over the %d-byte threshold", c.bytes(), applyThreshold)
	}
	child := tb.cache[bucketAddr{1, 0}]
	if child == nil || !child.dirty || len(child.b.entries) == 0 {
		t.Fatal("the child did not receive its changes at the threshold")
	}
}

// An update or a deletion of a deep entry is buffered: the newer version
// shadows the stored one and the deletion hides it, with no page write,
// and applying them changes the stored bucket accordingly.
func TestDeepUpdatesAndDeletionsAreBuffered(t *testing.T) {
	tb := newTestTable(t, spillOptions())
	for n := uint64(0); n < 11; n++ {
		mustPut(t, tb, childKey(n, 0), engine.Terms{ProducedAt: uint32(n)})
	}
	settle(t, tb)
	deep := childKey(0, 0)
	gone := childKey(1, 0)
	for _, k := range []engine.Key{deep, gone} {
		if loc, found, _ := tb.locate(&k); !found || loc.layer != 1 || loc.changes != nil {
			t.Fatalf("key not stored in layer 1: %+v", loc)
		}
	}
	writes := tb.pages.pageWrites
	loc, _, _ := tb.lookup(&deep)
	if err := tb.put(loc, true, entry{key: deep, terms: engine.Terms{ProducedAt: 0, Consumed: true}}, []byte("spent")); err != nil {
		t.Fatal(err)
	}
	loc, _, _ = tb.lookup(&gone)
	if err := tb.remove(loc); err != nil {
		t.Fatal(err)
	}
	tb.dropClean()
	if err := tb.flush(); err != nil {
		t.Fatal(err)
	}
	if tb.pages.pageWrites != writes {
		t.Fatalf("a deep update and deletion cost %d page writes before being applied", tb.pages.pageWrites-writes)
	}
	check := func(when string) {
		t.Helper()
		v, err := tb.get([]engine.Key{deep, gone}, 0)
		if err != nil || string(v[0]) != "spent" || v[1] != nil {
			t.Fatalf("%s: read %q and %q (%v), want the new version and nothing", when, v[0], v[1], err)
		}
		if _, found, _ := tb.locate(&gone); found {
			t.Fatalf("%s: the deleted key is still located", when)
		}
		if tb.layers[1].entries+tb.layers[0].entries != 10 {
			t.Fatalf("%s: %d entries counted, want 10", when, tb.layers[1].entries+tb.layers[0].entries)
		}
	}
	check("buffered")
	settle(t, tb)
	check("applied")
	b, err := tb.load(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if pos := b.find(&deep); pos < 0 || !b.entries[pos].terms.Consumed {
		t.Fatal("the stored bucket does not hold the new version")
	}
	if b.find(&gone) >= 0 {
		t.Fatal("the stored bucket still holds the deleted entry")
	}
}

// Over its memory budget the change buffer applies its largest changes
// until a quarter of the budget is free; nothing is lost on the way.
func TestChangeBufferStaysWithinBudget(t *testing.T) {
	o := tinyOptions()
	o.Shards = 1
	o.ChangeBufferBytes = 6 << 10
	tb := newTestTable(t, o)
	var keys []engine.Key
	peak := 0
	for i := uint64(0); i < 2000; i++ {
		k := mkKey(i, i*0x9E3779B97F4A7C15)
		keys = append(keys, k)
		mustPut(t, tb, k, engine.Terms{ProducedAt: uint32(i)})
		peak = max(peak, tb.pendingMemory)
		if err := tb.settle(); err != nil {
			t.Fatal(err)
		}
		if tb.pendingMemory > o.ChangeBufferBytes {
			t.Fatalf("after put %d the buffer holds %d bytes, over its budget of %d", i, tb.pendingMemory, o.ChangeBufferBytes)
		}
	}
	if peak <= o.ChangeBufferBytes {
		t.Fatalf("the buffer never went over budget (peak %d): the test trims nothing", peak)
	}
	values, err := tb.get(keys, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range values {
		if v == nil {
			t.Fatalf("key %d lost", i)
		}
	}
}
