package sozu

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
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
	if c := tb.pending[addrOf(1, 0)]; c != nil && c.bytes() >= applyThreshold {
		t.Fatalf("changes of %d bytes still buffered over the %d-byte threshold", c.bytes(), applyThreshold)
	}
	child := tb.cache[addrOf(1, 0)]
	if child.b == nil || !child.dirty || len(child.b.entries) == 0 {
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

// Random creates, updates (some raising the production height, which
// marks the buckets above dirty), consumptions and removals against a
// map, with cache drops, budget trims and flushes in between, under a
// budget small enough that layers switch from buffering to direct
// changes: every key reads back as the model says, the table holds each
// key exactly once, and the layer counters match what it holds.
func TestBufferedTableMatchesAModel(t *testing.T) {
	o := tinyOptions()
	o.Shards = 1
	o.ChangeBufferBytes = 8 << 10
	o.DirtyBytes = 1 << 20 // dirty buckets stay long enough to meet buffered changes
	tb := newTestTable(t, o)
	rng := rand.New(rand.NewPCG(1, 2))
	model := map[engine.Key][]byte{}
	var keys []engine.Key
	put := func(k engine.Key, terms engine.Terms, v []byte) {
		t.Helper()
		loc, found, err := tb.lookup(&k)
		if err != nil {
			t.Fatal(err)
		}
		if err := tb.put(loc, found, entry{key: k, terms: terms}, v); err != nil {
			t.Fatal(err)
		}
		model[k] = v
	}
	check := func(step int) {
		t.Helper()
		values, err := tb.get(keys, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, k := range keys {
			if want := model[k]; !bytes.Equal(values[i], want) {
				t.Fatalf("step %d: key %d reads %x, want %x", step, i, values[i], want)
			}
		}
		held := map[engine.Key]int{}
		nonEmpty := make([]int64, len(tb.layers))
		err = tb.walk(func(layer int, b *bucket, stored bool) error {
			if stored {
				nonEmpty[layer]++
			}
			for _, e := range b.entries {
				held[e.key]++
			}
			return nil
		})
		for layer, n := range nonEmpty {
			if tb.layers[layer].buckets != n {
				t.Fatalf("step %d: layer %d counts %d non-empty buckets, holds %d", step, layer, tb.layers[layer].buckets, n)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		var counted int64
		for _, c := range tb.layers {
			counted += c.entries
		}
		for k, n := range held {
			if n != 1 || model[k] == nil {
				t.Fatalf("step %d: the table holds %d copies of a key the model has as %x", step, n, model[k])
			}
		}
		if len(held) != len(model) || counted != int64(len(model)) {
			t.Fatalf("step %d: the table holds %d keys, counts %d, the model has %d", step, len(held), counted, len(model))
		}
		checkSparseIndex(t, tb.pages)
	}
	buffered, direct := 0, 0
	for step := 0; step < 6000; step++ {
		switch op := rng.IntN(10); {
		case op < 4 || len(model) == 0:
			k := mkKey(uint64(step), rng.Uint64())
			keys = append(keys, k)
			put(k, engine.Terms{ProducedAt: uint32(step)}, []byte(fmt.Sprintf("v%d", step)))
		case op < 8:
			k := keys[rng.IntN(len(keys))]
			if model[k] == nil {
				continue
			}
			if loc, _, _ := tb.lookup(&k); loc.layer > 0 {
				if tb.buffers(loc) {
					buffered++
				} else {
					direct++
				}
			}
			// Half the updates raise the production height past every
			// bucket's; values change size, so an update can overflow.
			terms := engine.Terms{ProducedAt: uint32(rng.IntN(step + 1)), Consumed: rng.IntN(2) == 0}
			if rng.IntN(2) == 0 {
				terms.ProducedAt = uint32(step + 1)
			}
			put(k, terms, fmt.Appendf(bytes.Repeat([]byte{'u'}, rng.IntN(100)), "%d", step))
		default:
			k := keys[rng.IntN(len(keys))]
			loc, found, err := tb.lookup(&k)
			if err != nil {
				t.Fatal(err)
			}
			if found != (model[k] != nil) {
				t.Fatalf("step %d: lookup found %v, the model has %x", step, found, model[k])
			}
			if found {
				if err := tb.remove(loc); err != nil {
					t.Fatal(err)
				}
				delete(model, k)
			}
		}
		if rng.IntN(4) == 0 {
			tb.dropClean()
			if err := tb.settle(); err != nil {
				t.Fatal(err)
			}
		}
		if rng.IntN(500) == 0 {
			settle(t, tb)
		}
		if step%500 == 499 {
			check(step)
		}
	}
	settle(t, tb)
	check(-1)
	if buffered == 0 || direct == 0 {
		t.Fatalf("deep updates: %d buffered, %d direct; the test needs both", buffered, direct)
	}
	t.Logf("deep updates: %d buffered, %d direct; layers %+v", buffered, direct, tb.layers)
}

// A bucket with buffered changes is never changed directly, even when it
// is dirty in the cache: a direct change could spill the stored version
// of an entry whose newer version waits in the buffer, leaving two.
func TestBucketWithBufferedChangesIsNotBypassed(t *testing.T) {
	o := spillOptions()
	size := (&entry{value: make([]byte, 20)}).encodedSize()
	o.Capacity = []int{10 * size, 12 * size}
	tb := newTestTable(t, o)
	for n := uint64(0); n < 16; n++ {
		mustPut(t, tb, childKey(n, 0), engine.Terms{ProducedAt: uint32(n)})
	}
	settle(t, tb)
	x, err := tb.load(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(x.entries) < 2 {
		t.Fatalf("layer-1 bucket holds %d entries; the test needs two", len(x.entries))
	}
	slices.SortFunc(x.entries, func(a, b entry) int { return spillOrder(&a, &b) })
	first, second := x.entries[0].key, x.entries[1].key // first flows first
	tb.dropClean()

	loc, _, _ := tb.lookup(&first)
	if err := tb.put(loc, true, entry{key: first, terms: loc.b.entries[loc.pos].terms}, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if tb.pending[addrOf(1, 0)] == nil {
		t.Fatal("the update of a stored deep entry was not buffered")
	}
	// A deeper write raising the height would mark the bucket dirty.
	if _, err := tb.load(1, 0); err != nil {
		t.Fatal(err)
	}
	tb.markDirty(1, 0)
	// An update large enough to overflow the bucket.
	loc, _, _ = tb.lookup(&second)
	if err := tb.put(loc, true, entry{key: second, terms: loc.b.entries[loc.pos].terms}, make([]byte, 12*size)); err != nil {
		t.Fatal(err)
	}
	settle(t, tb)
	copies := 0
	err = tb.walk(func(_ int, b *bucket, _ bool) error {
		for _, e := range b.entries {
			if e.key == first {
				copies++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := tb.get([]engine.Key{first}, 0)
	if copies != 1 || string(v[0]) != "new" {
		t.Fatalf("%d copies of the updated entry, reading %q", copies, v[0])
	}
}

// A page checkpoint stores the buffered changes as they are instead of
// applying them (that would stall the block boundary), and a reopened
// store has them back and reads through them.
func TestBufferedChangesSurviveACheckpointAndReopen(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions()
	o.CheckpointLogBytes = 1 // every Checkpoint is a page checkpoint
	e := openFor(t, dir, o)
	putN(t, e, 0, 400, 20)
	before := stats(t, e)
	if before.BufferedBuckets == 0 {
		t.Fatal("nothing buffered; the test needs buffered changes")
	}
	if err := e.Checkpoint(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if st := stats(t, e); st.BufferedBuckets != before.BufferedBuckets || st.BufferedMemory != before.BufferedMemory {
		t.Fatalf("a page checkpoint changed the buffer: %d buckets (%d bytes), before %d (%d)",
			st.BufferedBuckets, st.BufferedMemory, before.BufferedBuckets, before.BufferedMemory)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openFor(t, dir, o)
	defer e.Close()
	st := stats(t, e)
	if st.BufferedBuckets != before.BufferedBuckets || st.Entries != before.Entries {
		t.Fatalf("reopened with %d buffered buckets and %d entries, closed with %d and %d",
			st.BufferedBuckets, st.Entries, before.BufferedBuckets, before.Entries)
	}
	// The layer counters (non-empty buckets count applied changes only)
	// come back as they were; page writes count from Open.
	for i := range st.Layers {
		before.Layers[i].PageWrites = 0
		if st.Layers[i] != before.Layers[i] {
			t.Fatalf("layer %d reopened as %+v, closed as %+v", i, st.Layers[i], before.Layers[i])
		}
	}
	values, err := e.Get(context.Background(), firstKeys(400))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range values {
		if !bytes.Equal(v, bytes.Repeat([]byte{byte(i)}, 20)) {
			t.Fatalf("key %d reads %x after the reopen", i, v)
		}
	}
}
