package sozu

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/utxostore/utxostore/engine"
)

// newTestTable is one shard's table over real files, driven directly.
func newTestTable(t *testing.T, o Options) *table {
	t.Helper()
	o, err := o.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pages, err := openPageStore(filepath.Join(dir, "pages"), false)
	if err != nil {
		t.Fatal(err)
	}
	values, err := openValueLog(filepath.Join(dir, "vlog"), 0, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pages.close(); values.close() })
	return newTable(o, pages, values, func() int64 { return 1 })
}

// mkKey makes a key whose hash is hashTop and whose tail is n.
func mkKey(n uint64, hashTop uint64) engine.Key {
	var k engine.Key
	binary.BigEndian.PutUint64(k[:8], hashTop)
	binary.BigEndian.PutUint64(k[24:], n)
	return k
}

// settle applies every buffered change (a budget of nothing) and writes
// every dirty bucket, so page-level facts can be asserted.
func settle(t *testing.T, tb *table) {
	t.Helper()
	if err := tb.trimPending(0); err != nil {
		t.Fatal(err)
	}
	if err := tb.flush(); err != nil {
		t.Fatal(err)
	}
	if len(tb.pending) != 0 || tb.pendingMemory != 0 {
		t.Fatalf("%d buffered changes (%d bytes) left after applying them all", len(tb.pending), tb.pendingMemory)
	}
}

func mustPut(t *testing.T, tb *table, k engine.Key, terms engine.Terms) {
	t.Helper()
	loc, found, err := tb.lookup(&k)
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.put(loc, found, entry{key: k, terms: terms}, make([]byte, 20)); err != nil {
		t.Fatal(err)
	}
}

// One layer-0 bucket of ten 59-byte entries, α = 0.5.
func spillOptions() Options {
	e := entry{value: make([]byte, 20)}
	return Options{Shards: 1, Layer0Buckets: 1, FanoutBits: 3, Layers: 3,
		Capacity: []int{10 * e.encodedSize(), 100 * e.encodedSize()}, FlowRatio: []float64{0.5}}
}

func TestSpillOrderAndFlowRatio(t *testing.T) {
	tb := newTestTable(t, spillOptions())
	size := (&entry{value: make([]byte, 20)}).encodedSize()
	// Ten entries fit; the eleventh overflows. Three are consumed (they
	// must sink first whatever their height), the rest are live at
	// heights that make the spill order obvious.
	terms := []engine.Terms{
		{ProducedAt: 90, Consumed: true}, {ProducedAt: 1, Consumed: true}, {ProducedAt: 50, Consumed: true},
		{ProducedAt: 10}, {ProducedAt: 20}, {ProducedAt: 30}, {ProducedAt: 40},
		{ProducedAt: 60}, {ProducedAt: 70}, {ProducedAt: 70}, {ProducedAt: 80},
	}
	for i, tm := range terms {
		mustPut(t, tb, mkKey(uint64(i), uint64(i)<<40), tm)
	}
	b := tb.layer0[0]
	if !b.hasChildren {
		t.Fatal("the overflowing bucket did not spill")
	}
	keep := int(0.5 * float64(10*size))
	if b.size > keep || len(b.entries) != keep/size {
		t.Fatalf("bucket kept %d entries (%d bytes), want ⌊α·capacity⌋ = %d bytes, %d entries", len(b.entries), b.size, keep, keep/size)
	}
	// The five that stay are the newest live ones: 80, 70, 70, 60, 40; the
	// consumed ones and 10, 20, 30 flowed.
	kept := map[uint32]int{}
	for _, e := range b.entries {
		if e.terms.Consumed {
			t.Fatalf("a consumed entry stayed above live ones: %+v", e.terms)
		}
		kept[e.terms.ProducedAt]++
	}
	for _, h := range []uint32{40, 60, 70, 80} {
		if kept[h] == 0 {
			t.Fatalf("entry produced at %d flowed down before older ones; kept %v", h, kept)
		}
	}
	if kept[30] != 0 || kept[10] != 0 {
		t.Fatalf("old entries stayed: %v", kept)
	}
	if got := tb.layers[1].entries; got != 6 {
		t.Fatalf("layer 1 holds %d entries, want the 6 that flowed", got)
	}
	if b.maxHeight != 90 {
		t.Fatalf("max production height %d, want 90", b.maxHeight)
	}
}

func TestSpillOrderBreaksTiesByKey(t *testing.T) {
	a := entry{key: mkKey(1, 0), terms: engine.Terms{ProducedAt: 5}}
	b := entry{key: mkKey(2, 0), terms: engine.Terms{ProducedAt: 5}}
	c := entry{key: mkKey(0, 0), terms: engine.Terms{ProducedAt: 6}}
	d := entry{key: mkKey(9, 0), terms: engine.Terms{ProducedAt: 99, Consumed: true}}
	if spillOrder(&a, &b) >= 0 || spillOrder(&b, &c) >= 0 || spillOrder(&d, &a) >= 0 {
		t.Fatal("spill order is not consumed, then height, then key")
	}
}

func TestLazyAllocation(t *testing.T) {
	tb := newTestTable(t, spillOptions())
	// All keys share the same child (identical hash): one child of eight
	// gets entries, the other seven must cost nothing.
	for i := 0; i < 10; i++ {
		mustPut(t, tb, mkKey(uint64(i), 0), engine.Terms{ProducedAt: uint32(i)})
	}
	if tb.layer0[0].hasChildren || len(tb.pages.dir) != 0 || tb.pages.npages != 0 {
		t.Fatal("children allocated before the first spill")
	}
	mustPut(t, tb, mkKey(10, 0), engine.Terms{ProducedAt: 10})
	settle(t, tb)
	if !tb.layer0[0].hasChildren {
		t.Fatal("children reference still nil after a spill")
	}
	if len(tb.pages.dir) != 1 || tb.pages.npages != 1 {
		t.Fatalf("%d buckets on %d pages for one non-empty child", len(tb.pages.dir), tb.pages.npages)
	}
	st, _ := os.Stat(tb.pages.path)
	if st.Size() != PageSize {
		t.Fatalf("page file grew to %d bytes for one child", st.Size())
	}
}

func TestPurgeOnlyAfterDAHOnLongestChain(t *testing.T) {
	tb := newTestTable(t, spillOptions())
	for i := 0; i < 5; i++ {
		mustPut(t, tb, mkKey(uint64(i), uint64(i)<<40), engine.Terms{DeleteAtHeight: 100, Consumed: true})
	}
	mustPut(t, tb, mkKey(50, 50<<40), engine.Terms{DeleteAtHeight: 100, PreserveUntil: 200, Consumed: true})
	tb.height = 99
	for i := 5; i < 11; i++ {
		mustPut(t, tb, mkKey(uint64(i), uint64(i)<<40), engine.Terms{ProducedAt: 1})
	}
	if tb.purged != 0 || tb.indexes[engine.ByDeleteAtHeight][mkKey(0, 0)] != 100 {
		t.Fatalf("purged %d records before their delete-at-height", tb.purged)
	}
	tb.height = 100
	for i := 11; i < 30; i++ {
		mustPut(t, tb, mkKey(uint64(i), uint64(i)<<40), engine.Terms{ProducedAt: 1})
	}
	if tb.purged != 5 {
		t.Fatalf("purged %d records at their delete-at-height, want 5 (the preserved one stays)", tb.purged)
	}
	if loc, found, _ := tb.locate(ptr(mkKey(50, 50<<40))); !found || loc.b == nil {
		t.Fatal("a record preserved beyond the height was purged")
	}
	if _, found, _ := tb.locate(ptr(mkKey(0, 0))); found {
		t.Fatal("a purged record is still there")
	}
	if _, ok := tb.indexes[engine.ByDeleteAtHeight][mkKey(0, 0)]; ok {
		t.Fatal("a purged record is still indexed")
	}
}

func ptr(k engine.Key) *engine.Key { return &k }

func TestHeightFilterStopsDescent(t *testing.T) {
	tb := newTestTable(t, spillOptions())
	for i := 0; i < 11; i++ {
		mustPut(t, tb, mkKey(uint64(i), uint64(i)<<40), engine.Terms{ProducedAt: uint32(10 + i)})
	}
	settle(t, tb)
	// The oldest entry (height 10) sank into layer 1.
	old := mkKey(0, 0)
	if loc, found, _ := tb.locate(&old); !found || loc.layer != 1 {
		t.Fatalf("oldest entry at layer %d", loc.layer)
	}
	tb.bucketVisits = 0
	v, err := tb.get([]engine.Key{old}, 21)
	if err != nil {
		t.Fatal(err)
	}
	if v[0] != nil || tb.bucketVisits != 1 {
		t.Fatalf("filtered read above every height visited %d buckets (want 1) and found %v", tb.bucketVisits, v[0] != nil)
	}
	tb.bucketVisits = 0
	if v, _ := tb.get([]engine.Key{old}, 20); v[0] == nil || tb.bucketVisits != 2 {
		t.Fatalf("read at a covered height visited %d buckets, found %v", tb.bucketVisits, v[0] != nil)
	}
}

func TestBatchedReadVisitsEachBucketOnce(t *testing.T) {
	o := tinyOptions()
	o.Shards = 1
	tb := newTestTable(t, o)
	var keys []engine.Key
	for i := uint64(0); i < 400; i++ {
		k := mkKey(i, i*0x9E3779B97F4A7C15)
		keys = append(keys, k)
		mustPut(t, tb, k, engine.Terms{ProducedAt: uint32(i)})
	}
	settle(t, tb)
	// The buckets the reads must visit: every bucket on every key's path.
	want := map[bucketAddr]bool{}
	for i := range keys {
		h := keyHash(&keys[i])
		for layer := 0; layer < tb.layout.layers; layer++ {
			idx := tb.layout.bucketIndex(h, layer)
			want[addrOf(uint8(layer), idx)] = true
			b, _ := tb.load(layer, idx)
			if b.find(&keys[i]) >= 0 {
				break
			}
		}
	}
	tb.dropClean()
	tb.bucketVisits = 0
	reads := tb.pages.pageReads
	values, err := tb.get(append(keys, keys...), 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range values {
		if v == nil {
			t.Fatalf("key %d missing", i%len(keys))
		}
	}
	// Summaries spare the buckets above a key that cannot hold it; none
	// is read twice.
	if tb.bucketVisits > uint64(len(want)) {
		t.Fatalf("a batch of %d keys (each twice) visited %d buckets; %d distinct buckets hold their paths", len(keys), tb.bucketVisits, len(want))
	}
	if deep := tb.pages.pageReads - reads; deep > uint64(len(want)) {
		t.Fatalf("%d page reads for %d buckets", deep, len(want))
	}
	t.Logf("%d keys over %d buckets, layers %+v", len(keys), len(want), tb.layers)
}

// Over its budget of dirty buckets, settle writes out only the excess, the
// buckets dirty the longest, and the others stay in memory, unwritten.
func TestSettleWritesOutTheOldestDirtyBuckets(t *testing.T) {
	o := spillOptions()
	o.DirtyBytes = 4 * PageSize // a budget of four buckets (one shard)
	tb := newTestTable(t, o)
	order := []uint64{6, 2, 7, 0, 5, 3} // the order the buckets get dirty
	for n, i := range order {
		b, err := tb.load(1, i)
		if err != nil {
			t.Fatal(err)
		}
		tb.addTo(1, b, entry{key: mkKey(uint64(n), 0), value: make([]byte, 20)})
		tb.markDirty(1, i)
	}
	tb.dropClean()
	if err := tb.settle(); err != nil {
		t.Fatal(err)
	}
	for n, i := range order {
		addr := addrOf(1, i)
		_, stored := tb.pages.dir[addr]
		c, cached := tb.cache[addr]
		if written := n < 2; written {
			if !stored || cached {
				t.Errorf("bucket %d, dirty %d-th of 6 with a budget of 4: stored %v, cached %v; want written out and dropped", i, n+1, stored, cached)
			}
			continue
		}
		if stored || !cached || !c.dirty {
			t.Errorf("bucket %d, dirty %d-th of 6 with a budget of 4: stored %v, cached %v; want kept dirty in memory", i, n+1, stored, cached)
		}
	}
	if len(tb.dirtyOrder) != 4 {
		t.Fatalf("%d dirty buckets listed after settling; want the budget, 4", len(tb.dirtyOrder))
	}
	// What was written reads back; a full flush writes the rest.
	if err := tb.flush(); err != nil {
		t.Fatal(err)
	}
	for n, i := range order {
		b, err := tb.load(1, i)
		if err != nil {
			t.Fatal(err)
		}
		if k := mkKey(uint64(n), 0); len(b.entries) != 1 || b.find(&k) != 0 {
			t.Errorf("bucket %d read back with %d entries, want its one key", i, len(b.entries))
		}
	}
}
