package sozu

import (
	"slices"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/internal/termindex"
)

// table is one shard's Sozu table. It is owned by the shard's goroutine and
// is not safe for concurrent use; it knows nothing of logging, which the
// shard does around it.
type table struct {
	opts   Options
	layout layout
	layer0 []*bucket
	// layer0Dirty lists the layer-0 buckets changed since the last page
	// checkpoint (layer0Marked dedups it): only they are written out, so a
	// checkpoint costs what changed, not the layer's size.
	layer0Dirty  []uint64
	layer0Marked []bool
	pages        *pageStore
	values       *valueLog
	// cache holds the deep buckets read during the current batch and every
	// deep bucket modified since it was last written out. Writing out is
	// deferred (bounded by Options.DirtyBytes, forced at checkpoints)
	// because the log already makes the change durable and several spills
	// into one bucket then cost one page write.
	cache map[bucketAddr]cachedBucket
	// loaded lists the addresses put in the cache since the last
	// dropClean, and dirtyOrder the cached buckets marked dirty, in the
	// order they became dirty: commits run them after every batch, so they
	// must not scan the whole cache (such a scan would be the top CPU
	// cost at a million records), and settle writes out the oldest, which a batch is
	// least likely to modify again (a bucket modified anew while dirty
	// costs no write).
	loaded     []bucketAddr
	dirtyOrder []bucketAddr
	// pending holds the changes buffered for deep buckets (changes.go),
	// pendingMemory their size.
	pending       map[bucketAddr]*changes
	pendingMemory int
	filter        *keyFilter
	indexes       *termindex.Indexes
	// height is the longest-chain height the purge compares DAH against.
	height uint32
	meta   map[string][]byte
	now    func() int64

	layers       []layerCounters
	purged       uint64
	compactions  int // value-log compactions since Open
	bucketVisits uint64
	// descent[n] counts key lookups that visited n buckets.
	descent []uint64
	// patched is the value a replay last made of a patch record, its
	// memory kept for the next (put copies it).
	patched []byte
}

type cachedBucket struct {
	b     *bucket
	dirty bool
}

func newTable(o Options, pages *pageStore, values *valueLog, now func() int64) *table {
	t := &table{
		opts:         o,
		layout:       newLayout(o),
		layer0:       make([]*bucket, o.Layer0Buckets),
		layer0Marked: make([]bool, o.Layer0Buckets),
		pages:        pages,
		values:       values,
		cache:        make(map[bucketAddr]cachedBucket),
		pending:      make(map[bucketAddr]*changes),
		filter:       newKeyFilter(o.FilterKeys),
		indexes:      termindex.New(),
		meta:         make(map[string][]byte),
		now:          now,
		layers:       make([]layerCounters, o.Layers),
		descent:      make([]uint64, o.Layers+1),
	}
	for i := range t.layer0 {
		t.layer0[i] = &bucket{}
	}
	pages.summarize(t.layout)
	return t
}

// held returns the bucket at (layer, index) when memory holds it (layer
// 0, or a cached deep bucket), and otherwise the summary of its stored
// state when one is known (pageStore.summaryOf), which is then its
// current state: one cache probe answers both. Buffered changes are in
// neither; callers look at them first.
func (t *table) held(layer int, index uint64) (*bucket, summary) {
	if layer == 0 {
		return t.layer0[index], summary{}
	}
	addr := addrOf(uint8(layer), index)
	if b := t.cache[addr].b; b != nil {
		return b, summary{}
	}
	return nil, t.pages.summaryOf(addr)
}

// load returns the bucket at (layer, index): from memory, or read from
// its pages into the cache.
func (t *table) load(layer int, index uint64) (*bucket, error) {
	if b, _ := t.held(layer, index); b != nil {
		return b, nil
	}
	return t.readIn(layer, index)
}

// readIn reads the deep bucket at (layer, index), which memory does not
// hold, into the cache.
func (t *table) readIn(layer int, index uint64) (*bucket, error) {
	addr := addrOf(uint8(layer), index)
	b, err := t.pages.read(addr)
	if err != nil {
		return nil, err
	}
	t.cache[addr] = cachedBucket{b: b}
	t.loaded = append(t.loaded, addr)
	return b, nil
}

func (t *table) markDirty(layer int, index uint64) {
	if layer == 0 {
		if !t.layer0Marked[index] {
			t.layer0Marked[index] = true
			t.layer0Dirty = append(t.layer0Dirty, index)
		}
		return
	}
	addr := addrOf(uint8(layer), index)
	if c := t.cache[addr]; c.b != nil && !c.dirty {
		t.cache[addr] = cachedBucket{b: c.b, dirty: true}
		t.dirtyOrder = append(t.dirtyOrder, addr)
	}
}

// location is where a key was found: in the bucket at (layer, index) or,
// when changes is set, among the changes buffered for it (b is then
// &changes.put).
type location struct {
	layer   int
	index   uint64
	b       *bucket
	pos     int
	changes *changes
}

// locate descends from layer 0 until it finds k or runs out of children.
// A bucket's buffered changes come before the bucket.
func (t *table) locate(k *engine.Key) (location, bool, error) {
	return t.locateFrom(k, 0)
}

// locateFrom is locate starting at layer first: the layers above it are
// known not to hold k.
func (t *table) locateFrom(k *engine.Key, first int) (location, bool, error) {
	h := keyHash(k)
	for layer := first; layer < t.layout.layers; layer++ {
		idx := t.layout.bucketIndex(h, layer)
		if c := t.pending[addrOf(uint8(layer), idx)]; c != nil {
			if pos := c.put.find(k); pos >= 0 {
				return location{layer, idx, &c.put, pos, c}, true, nil
			}
			if c.isRemoved(k) {
				// The key lived here (keys are unique), so not below.
				return location{}, false, nil
			}
		}
		b, m := t.held(layer, idx)
		if b == nil && m.known && !m.mayHold(k) {
			if !m.hasChildren {
				break
			}
			continue
		}
		if b == nil {
			var err error
			if b, err = t.readIn(layer, idx); err != nil {
				return location{}, false, err
			}
		}
		if pos := b.find(k); pos >= 0 {
			return location{layer, idx, b, pos, nil}, true, nil
		}
		if !b.hasChildren {
			break
		}
	}
	return location{}, false, nil
}

// lookup is locate behind the filter's proof of absence; it also measures
// the filter's false-positive rate. Layer 0, in memory, is looked at
// before the filter: most updates change young records, which it holds,
// and for them the filter's answer would be a cost and no news.
func (t *table) lookup(k *engine.Key) (location, bool, error) {
	idx := t.layout.bucketIndex(keyHash(k), 0)
	if pos := t.layer0[idx].find(k); pos >= 0 {
		return location{0, idx, t.layer0[idx], pos, nil}, true, nil
	}
	if t.filter.stale {
		if err := t.rebuildFilter(); err != nil {
			return location{}, false, err
		}
	}
	if !t.filter.mayContain(k) {
		t.filter.trueNegatives++
		return location{}, false, nil
	}
	loc, found, err := t.locateFrom(k, 1)
	if err == nil && !found {
		t.filter.falsePositives++
	}
	return loc, found, err
}

// valueOf returns a copy of e's value.
func (t *table) valueOf(e *entry) ([]byte, error) {
	if e.outOfLine {
		return t.values.read(e.key, e.ptr)
	}
	return append(make([]byte, 0, len(e.value)), e.value...), nil
}

// lendValue returns e's value without a copy, for an UpdateFunc, which
// neither changes nor keeps it: it is valid until the table changes.
func (t *table) lendValue(e *entry) ([]byte, error) {
	if e.outOfLine {
		return t.values.lend(e.key, e.ptr)
	}
	return e.value, nil
}

// put stores e with value, over the entry at loc when found (the update
// lands where the key lives, so unicity holds without a second copy) or
// into layer 0 when the key is proven absent.
func (t *table) put(loc location, found bool, e entry, value []byte) error {
	if len(value) > t.opts.InlineMax {
		p, err := t.values.append(e.key, value)
		if err != nil {
			return err
		}
		e.outOfLine, e.ptr = true, p
	} else {
		e.value = append(make([]byte, 0, len(value)), value...)
	}
	h := keyHash(&e.key)
	var was engine.Terms
	if !found {
		idx := t.layout.bucketIndex(h, 0)
		loc = location{layer: 0, index: idx, b: t.layer0[idx], pos: -1}
		t.filter.add(&e.key)
	} else {
		old := &loc.b.entries[loc.pos]
		if old.outOfLine {
			t.values.forget(old.ptr)
		}
		was = old.terms
	}
	t.indexes.Set(e.key, was, e.terms)
	buffered := found && t.buffers(loc)
	switch {
	case buffered:
		if err := t.bufferReplace(loc, e); err != nil {
			return err
		}
	case loc.pos < 0:
		t.addTo(loc.layer, loc.b, e)
		t.markDirty(loc.layer, loc.index)
	default:
		c := &t.layers[loc.layer]
		c.bytes += int64(e.encodedSize() - loc.b.entries[loc.pos].encodedSize())
		loc.b.replace(loc.pos, e)
		t.markDirty(loc.layer, loc.index)
	}
	// Every bucket above must cover the new production height, or a
	// height-filtered read would stop above it.
	for layer := 0; layer < loc.layer; layer++ {
		idx := t.layout.bucketIndex(h, layer)
		b, m := t.held(layer, idx)
		if b == nil && m.known && m.maxHeight >= e.terms.ProducedAt {
			continue
		}
		if b == nil {
			var err error
			if b, err = t.readIn(layer, idx); err != nil {
				return err
			}
		}
		if b.raiseHeight(e.terms.ProducedAt) {
			t.markDirty(layer, idx)
		}
	}
	// A buffered change is checked for overflow when it is applied.
	if !buffered && t.overflowing(loc.layer, loc.b) {
		return t.spill(loc.layer, loc.index, loc.b)
	}
	return nil
}

// buffers reports whether a change to the entry at loc is buffered rather
// than made in the bucket. A bucket with buffered changes always takes
// more (changing it directly could purge or spill a stored entry whose
// newer version waits in the buffer); layer 0 is memory already; a deep
// bucket dirty in the cache will be written anyway; otherwise it depends
// on the layer (buffering).
func (t *table) buffers(loc location) bool {
	if loc.layer == 0 {
		return false
	}
	addr := addrOf(uint8(loc.layer), loc.index)
	if t.pending[addr] != nil {
		return true
	}
	if t.cache[addr].dirty {
		return false
	}
	return t.buffering(loc.layer)
}

// buffering reports whether changes to the buckets of layer are buffered:
// only while the buffer can hold a few changes for each of the layer's
// populated buckets (half a threshold each). Beyond that, changes to
// random buckets would leave it one by one, each costing the page read
// and write that buffering meant to share, plus a read to apply it.
func (t *table) buffering(layer int) bool {
	return t.layers[layer].buckets*applyThreshold/2 <= int64(t.opts.ChangeBufferBytes/t.opts.Shards)
}

// remove hard-deletes the entry at loc.
func (t *table) remove(loc location) error {
	if t.buffers(loc) {
		e, err := t.bufferRemove(loc)
		t.forget(&e)
		return err
	}
	e := t.removeFrom(loc.layer, loc.b, loc.pos)
	t.forget(&e)
	t.markDirty(loc.layer, loc.index)
	return nil
}

// forget drops a removed entry from the filter, indexes and value log.
func (t *table) forget(e *entry) {
	t.filter.remove(&e.key)
	t.indexes.Drop(e.key)
	if e.outOfLine {
		t.values.forget(e.ptr)
	}
}

func (t *table) addTo(layer int, b *bucket, e entry) {
	c := &t.layers[layer]
	if len(b.entries) == 0 {
		c.buckets++
	}
	c.entries++
	c.bytes += int64(e.encodedSize())
	b.add(e)
}

func (t *table) removeFrom(layer int, b *bucket, pos int) entry {
	e := b.removeAt(pos)
	c := &t.layers[layer]
	c.entries--
	c.bytes -= int64(e.encodedSize())
	if len(b.entries) == 0 {
		c.buckets--
	}
	return e
}

func (t *table) overflowing(layer int, b *bucket) bool {
	return layer < t.layout.layers-1 && b.size > t.opts.capacity(layer)
}

// flush writes every dirty deep bucket out and empties the cache.
func (t *table) flush() error {
	if err := t.writeDirty(t.dirtyOrder); err != nil {
		return err
	}
	clear(t.cache)
	t.loaded = t.loaded[:0]
	t.dirtyOrder = t.dirtyOrder[:0]
	return nil
}

// flushOldest writes out the n buckets dirty the longest and drops them
// from the cache.
func (t *table) flushOldest(n int) error {
	oldest := t.dirtyOrder[:n]
	if err := t.writeDirty(oldest); err != nil {
		return err
	}
	for _, a := range oldest {
		delete(t.cache, a)
	}
	t.dirtyOrder = slices.Delete(t.dirtyOrder, 0, n)
	return nil
}

// writeDirty writes the cached buckets at addrs out, sorted by address:
// a layer's pages then lie close together. It leaves them in the cache.
func (t *table) writeDirty(addrs []bucketAddr) error {
	addrs = slices.Sorted(slices.Values(addrs))
	for len(addrs) > 0 {
		layer := addrs[0].layer()
		n := 1
		for n < len(addrs) && addrs[n].layer() == layer {
			n++
		}
		indexes := make([]uint64, n)
		for i, a := range addrs[:n] {
			indexes[i] = a.index()
		}
		err := t.writeOut(layer, indexes, func(i uint64) *bucket {
			return t.cache[addrOf(layer, i)].b
		})
		if err != nil {
			return err
		}
		addrs = addrs[n:]
	}
	return nil
}

// flushLayer0 writes the layer-0 buckets changed since the last page
// checkpoint to fresh pages (copy-on-write, like deep buckets); layer 0
// stays in memory, the pages are only its durable image.
func (t *table) flushLayer0() error {
	slices.Sort(t.layer0Dirty)
	err := t.writeOut(0, t.layer0Dirty, func(i uint64) *bucket { return t.layer0[i] })
	if err != nil {
		return err
	}
	for _, i := range t.layer0Dirty {
		t.layer0Marked[i] = false
	}
	t.layer0Dirty = t.layer0Dirty[:0]
	return nil
}

// writeOut writes the changed buckets of layer (indexes ascending) one
// span of runSpan neighbouring buckets at a time: neighbours share runs.
func (t *table) writeOut(layer uint8, indexes []uint64, current func(uint64) *bucket) error {
	span := uint64(runSpan)
	for len(indexes) > 0 {
		first := indexes[0] &^ (span - 1)
		n := 1
		for n < len(indexes) && indexes[n] < first+span {
			n++
		}
		if err := t.pages.writeRange(layer, first, indexes[:n], current); err != nil {
			return err
		}
		indexes = indexes[n:]
	}
	return nil
}

// settle keeps the buffered changes and the dirty deep buckets within
// their memory budgets (this shard's share): over budget, the largest
// changes are applied, then the oldest dirty buckets written out, as many
// as exceed the budget. Writing out a few each batch, rather than all of
// them once in a while, keeps each call's share of the work short and
// keeps every dirty bucket in memory longer.
func (t *table) settle() error {
	if err := t.trimPending(t.opts.ChangeBufferBytes / t.opts.Shards); err != nil {
		return err
	}
	if excess := len(t.dirtyOrder) - t.dirtyBudget(); excess > 0 {
		return t.flushOldest(excess)
	}
	return nil
}

// dirtyBudget is how many modified deep buckets the shard keeps in
// memory: its share of DirtyBytes at a page each, which most of them fill.
func (t *table) dirtyBudget() int { return t.opts.DirtyBytes / t.opts.Shards / PageSize }

// dropClean forgets the deep buckets read but not modified: the cache is
// not a read cache (the OS page cache is).
func (t *table) dropClean() {
	for _, a := range t.loaded {
		if c, ok := t.cache[a]; ok && !c.dirty {
			delete(t.cache, a)
		}
	}
	t.loaded = t.loaded[:0]
}

// walk calls fn for every non-empty bucket, layer 0 first, with its
// buffered changes applied; held reports whether the bucket holds entries
// without them (what the layer counters count as a non-empty bucket).
func (t *table) walk(fn func(layer int, b *bucket, held bool) error) error {
	for _, b := range t.layer0 {
		if !b.empty() {
			if err := fn(0, b, len(b.entries) > 0); err != nil {
				return err
			}
		}
	}
	// Layer 0's pages are only its durable image: memory is current. A
	// deep bucket is seen with its buffered changes applied (to a copy).
	seen := make(map[bucketAddr]bool, len(t.cache)+len(t.pending))
	visit := func(a bucketAddr, b *bucket) error {
		seen[a] = true
		held := len(b.entries) > 0
		if c := t.pending[a]; c != nil {
			b = b.clone()
			c.applyTo(b)
		}
		if len(b.entries) == 0 {
			return nil
		}
		return fn(int(a.layer()), b, held)
	}
	for a, c := range t.cache {
		if err := visit(a, c.b); err != nil {
			return err
		}
	}
	err := t.pages.runs(func(r *run) error {
		if r.layer == 0 {
			return nil
		}
		var spans [][]byte
		for k, m := range r.members() {
			a := addrOf(r.layer, m)
			if seen[a] {
				continue
			}
			if spans == nil {
				var err error
				if spans, err = t.pages.readRun(r); err != nil {
					return err
				}
			}
			b, err := t.pages.decodeMember(r, spans, k)
			if err != nil {
				return err
			}
			if err := visit(a, b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for a := range t.pending {
		if !seen[a] {
			if err := visit(a, &bucket{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// rebuildFilter refills a stale filter from the table, larger.
func (t *table) rebuildFilter() error {
	var n int64
	for _, c := range t.layers {
		n += c.entries
	}
	t.filter.reset(int(n) + 1)
	return t.walk(func(_ int, b *bucket, _ bool) error {
		for i := range b.entries {
			t.filter.add(&b.entries[i].key)
		}
		return nil
	})
}
