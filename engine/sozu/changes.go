package sozu

import (
	"slices"
	"unsafe"

	"github.com/utxostore/utxostore/engine"
)

// changes are the buffered changes to one deep bucket: entries that flowed
// into it from its parent, newer versions of its entries, and deletions of
// its entries. They live in memory, ahead of the bucket's pages, until
// they are worth a page write: a spill hands each child a fraction of a
// page, and an update of a deep record changes a few dozen bytes, so
// writing the child's page at once would cost 4 KiB for each of them.
// The log makes them durable meanwhile; a page checkpoint stores them in
// its checkpoint file as they are.
//
// Reads look at a bucket's changes before the bucket: a newer version
// shadows the stored one and a deletion hides it.
type changes struct {
	// put holds the entries to add to the bucket or to replace there.
	put bucket
	// removed holds the keys to delete from the bucket: at most
	// applyThreshold/KeySize of them, few enough to search in turn. A
	// slice is one object where a map would be several, for each of the ~90,000
	// buckets with buffered changes at ten million records, for the
	// garbage collector to mark.
	removed []engine.Key
	// memory estimates the bytes the changes take in memory.
	memory int
}

// Memory estimates for the change buffer's budget: an entry costs its
// struct, its tag and its value, a deleted key its map slot, and a
// bucket's changes their own bookkeeping.
const (
	entryMemory   = int(unsafe.Sizeof(entry{})) + int(unsafe.Sizeof(uint32(0)))
	removedMemory = engine.KeySize
	changesMemory = int(unsafe.Sizeof(changes{})) + 64
)

// bytes is what the changes would add to the bucket's stream, the measure
// of whether a page write is worth it.
func (c *changes) bytes() int { return c.put.size + len(c.removed)*engine.KeySize }

// The methods below keep memory up to date and return by how much it
// changed, for the table's total.

func (c *changes) add(e entry) int {
	c.put.add(e)
	return c.account(entryMemory + cap(e.value))
}

func (c *changes) replace(pos int, e entry) int {
	old := entryMemory + cap(c.put.entries[pos].value)
	c.put.replace(pos, e)
	return c.account(entryMemory + cap(e.value) - old)
}

func (c *changes) removeAt(pos int) int {
	e := c.put.removeAt(pos)
	return c.account(-entryMemory - cap(e.value))
}

func (c *changes) markRemoved(k engine.Key) int {
	if c.isRemoved(&k) {
		return 0
	}
	c.removed = append(c.removed, k)
	return c.account(removedMemory)
}

// isRemoved reports whether the changes delete k from the bucket.
func (c *changes) isRemoved(k *engine.Key) bool {
	return slices.Contains(c.removed, *k)
}

func (c *changes) account(delta int) int {
	c.memory += delta
	return delta
}

// applyTo applies the changes to b: deletions first (a key deleted and
// then created again has its new version in put), then the entries of put,
// over the stored version of the same key or added.
func (c *changes) applyTo(b *bucket) {
	for i := range c.removed {
		if pos := b.find(&c.removed[i]); pos >= 0 {
			b.removeAt(pos)
		}
	}
	for _, e := range c.put.entries {
		if pos := b.find(&e.key); pos >= 0 {
			b.replace(pos, e)
		} else {
			b.add(e)
		}
	}
}

// applyThreshold is how much a bucket's changes may hold before they are
// applied: a quarter of a page, so a page write carries at least that
// much, while the buffer stays far below the bucket's own size.
const applyThreshold = PageSize / 4

// changesOf returns the changes buffered for addr, creating them.
func (t *table) changesOf(addr bucketAddr) *changes {
	c := t.pending[addr]
	if c == nil {
		c = newChanges()
		t.pending[addr] = c
		t.pendingMemory += c.memory
	}
	return c
}

func newChanges() *changes {
	return &changes{memory: changesMemory}
}

// bufferAdd buffers e, which flowed from its parent, for the bucket at
// (layer, index); the entry now belongs to that layer. Its value is
// copied: it may alias the page its parent was read from, which would
// otherwise stay in memory as long as the entry waits here.
func (t *table) bufferAdd(layer int, index uint64, e entry) error {
	e.value = slices.Clone(e.value)
	c := t.changesOf(addrOf(uint8(layer), index))
	t.pendingMemory += c.add(e)
	t.layers[layer].entries++
	t.layers[layer].bytes += int64(e.encodedSize())
	return t.applyIfFull(layer, index, c)
}

// bufferReplace buffers e as the newer version of the entry at loc, a
// deep bucket's stored entry or a buffered one.
func (t *table) bufferReplace(loc location, e entry) error {
	old := &loc.b.entries[loc.pos]
	t.layers[loc.layer].bytes += int64(e.encodedSize() - old.encodedSize())
	if loc.changes != nil {
		t.pendingMemory += loc.changes.replace(loc.pos, e)
		return t.applyIfFull(loc.layer, loc.index, loc.changes)
	}
	c := t.changesOf(addrOf(uint8(loc.layer), loc.index))
	t.pendingMemory += c.add(e)
	return t.applyIfFull(loc.layer, loc.index, c)
}

// bufferRemove buffers the deletion of the entry at loc and returns it.
func (t *table) bufferRemove(loc location) (entry, error) {
	e := loc.b.entries[loc.pos]
	t.layers[loc.layer].entries--
	t.layers[loc.layer].bytes -= int64(e.encodedSize())
	c := loc.changes
	if c != nil {
		t.pendingMemory += c.removeAt(loc.pos)
	} else {
		c = t.changesOf(addrOf(uint8(loc.layer), loc.index))
	}
	// A buffered version may stand for a stored one: delete both.
	t.pendingMemory += c.markRemoved(e.key)
	return e, t.applyIfFull(loc.layer, loc.index, c)
}

func (t *table) applyIfFull(layer int, index uint64, c *changes) error {
	if c.bytes() < applyThreshold {
		return nil
	}
	return t.apply(addrOf(uint8(layer), index))
}

// apply merges the changes buffered for addr into the bucket: one page
// read (if it is not cached) and, at the next flush, one page write for
// all of them. The merged bucket then runs the purge loop and spills if it
// overflows, which buffers changes for its children in turn.
func (t *table) apply(addr bucketAddr) error {
	c := t.pending[addr]
	delete(t.pending, addr)
	t.pendingMemory -= c.memory
	layer := int(addr.layer())
	b, err := t.load(layer, addr.index())
	if err != nil {
		return err
	}
	wasEmpty := len(b.entries) == 0
	c.applyTo(b)
	if isEmpty := len(b.entries) == 0; wasEmpty != isEmpty {
		if isEmpty {
			t.layers[layer].buckets--
		} else {
			t.layers[layer].buckets++
		}
	}
	t.markDirty(layer, addr.index())
	if t.overflowing(layer, b) {
		return t.spill(layer, addr.index(), b)
	}
	t.purge(layer, b)
	return nil
}

// trimPending keeps the buffered changes within their memory budget:
// over it, it applies the largest ones (they carry the most per page
// write) until a quarter of the budget is free. "Largest" is found by
// halving a size bar rather than by sorting, so a trim costs a few passes
// over the buffer, not a sort of it.
func (t *table) trimPending(budget int) error {
	if t.pendingMemory <= budget {
		return nil
	}
	for bar := applyThreshold / 2; t.pendingMemory > budget*3/4; bar /= 2 {
		for a, c := range t.pending {
			if t.pendingMemory <= budget*3/4 {
				break
			}
			if c.bytes() >= bar {
				if err := t.apply(a); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
