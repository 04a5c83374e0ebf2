package sozu

import (
	"bytes"
	"slices"
)

// spillOrder is the paper's priority for flowing down: entries consumed on
// all chains first (they are the likeliest to stay dead), then the oldest
// production height (Lindy: the old live longest, so they belong deep),
// then the key, so the order is total and deterministic.
func spillOrder(a, b *entry) int {
	if a.terms.Consumed != b.terms.Consumed {
		if a.terms.Consumed {
			return -1
		}
		return 1
	}
	if a.terms.ProducedAt != b.terms.ProducedAt {
		if a.terms.ProducedAt < b.terms.ProducedAt {
			return -1
		}
		return 1
	}
	return bytes.Compare(a.key[:], b.key[:])
}

// spill makes an overflowing bucket flow into its children. The purge loop
// runs first (dead records need not sink). Then the bucket keeps the
// longest tail of the spill order whose encoded size fits in
// ⌊α·capacity⌋ bytes, and everything before it flows to the children,
// which are allocated on this first spill (hasChildren) and may overflow
// in turn when the flow is applied to them.
func (t *table) spill(layer int, index uint64, b *bucket) error {
	t.purge(layer, b)
	t.markDirty(layer, index)
	if !t.overflowing(layer, b) {
		return nil
	}
	slices.SortFunc(b.entries, func(x, y entry) int { return spillOrder(&x, &y) })
	budget := int(t.opts.flowRatio(layer) * float64(t.opts.capacity(layer)))
	keepFrom, kept := len(b.entries), 0
	for i := len(b.entries) - 1; i >= 0; i-- {
		s := b.entries[i].encodedSize()
		if kept+s > budget {
			break
		}
		kept += s
		keepFrom = i
	}
	flow := b.entries[:keepFrom]
	c := &t.layers[layer]
	c.entries -= int64(len(flow))
	c.bytes -= int64(b.size - kept)
	b.keep(slices.Clone(b.entries[keepFrom:]), kept)
	if len(b.entries) == 0 {
		c.buckets--
	}
	b.hasChildren = true

	// What flows is buffered for a child (changes.go) while its layer
	// buffers or it has changes waiting already; otherwise it is added to
	// the child at once. Whether the layer buffers is decided once, so a
	// child never gets both (buffering may change as the flow is applied).
	// The spill order keeps both deterministic.
	buffering := t.buffering(layer + 1)
	direct := make(map[uint64][]entry)
	var order []uint64
	for _, e := range flow {
		ci := t.layout.bucketIndex(keyHash(&e.key), layer+1)
		if buffering || t.pending[addrOf(uint8(layer+1), ci)] != nil {
			if err := t.bufferAdd(layer+1, ci, e); err != nil {
				return err
			}
			continue
		}
		if _, ok := direct[ci]; !ok {
			order = append(order, ci)
		}
		direct[ci] = append(direct[ci], e)
	}
	slices.Sort(order)
	for _, ci := range order {
		child, err := t.load(layer+1, ci)
		if err != nil {
			return err
		}
		for _, e := range direct[ci] {
			t.addTo(layer+1, child, e)
		}
		t.markDirty(layer+1, ci)
		if t.overflowing(layer+1, child) {
			if err := t.spill(layer+1, ci, child); err != nil {
				return err
			}
		} else {
			t.purge(layer+1, child)
		}
	}
	return nil
}
