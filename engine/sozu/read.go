package sozu

import (
	"slices"

	"github.com/utxostore/utxostore/engine"
)

// get reads keys in one batched descent: at each layer the pending keys
// are grouped by bucket, so every bucket is read once however many keys
// it answers. A key whose bucket's maximum production height is below
// minHeight is not looked for below that bucket (the paper's height
// filter; 0 disables it). Expired records read as nil.
func (t *table) get(keys []engine.Key, minHeight uint32) ([][]byte, error) {
	out := make([][]byte, len(keys))
	now := t.now()
	var err error
	level := make(map[uint64][]int)
	for i := range keys {
		if t.filter.stale {
			if err := t.rebuildFilter(); err != nil {
				return nil, err
			}
		}
		if !t.filter.mayContain(&keys[i]) {
			t.filter.trueNegatives++
			continue
		}
		idx := t.layout.bucketIndex(keyHash(&keys[i]), 0)
		level[idx] = append(level[idx], i)
	}
	for layer := 0; len(level) > 0; layer++ {
		next := make(map[uint64][]int)
		indexes := make([]uint64, 0, len(level))
		for idx := range level {
			indexes = append(indexes, idx)
		}
		slices.Sort(indexes)
		for _, idx := range indexes {
			keysHere := level[idx]
			// Buffered changes come before the bucket (changes.go).
			if c := t.pending[addrOf(uint8(layer), idx)]; c != nil {
				rest := keysHere[:0:0]
				for _, i := range keysHere {
					if pos := c.put.find(&keys[i]); pos >= 0 {
						t.descent[layer+1]++
						if out[i], err = t.liveValue(&c.put.entries[pos], now); err != nil {
							return nil, err
						}
					} else if c.isRemoved(&keys[i]) {
						t.descent[layer+1]++
					} else {
						rest = append(rest, i)
					}
				}
				if keysHere = rest; len(keysHere) == 0 {
					continue
				}
			}
			// A summary that holds none of the keys answers for the
			// bucket: its pages need not be read.
			b, m := t.held(layer, idx)
			switch {
			case b != nil:
				t.bucketVisits++
			case m.known && !slices.ContainsFunc(keysHere, func(i int) bool { return m.mayHold(&keys[i]) }):
				b = &bucket{hasChildren: m.hasChildren, maxHeight: m.maxHeight}
			default:
				if b, err = t.readIn(layer, idx); err != nil {
					return nil, err
				}
				t.bucketVisits++
			}
			for _, i := range keysHere {
				if pos := b.find(&keys[i]); pos >= 0 {
					t.descent[layer+1]++
					if out[i], err = t.liveValue(&b.entries[pos], now); err != nil {
						return nil, err
					}
					continue
				}
				if b.hasChildren && minHeight <= b.maxHeight && layer+1 < t.layout.layers {
					ci := t.layout.bucketIndex(keyHash(&keys[i]), layer+1)
					next[ci] = append(next[ci], i)
					continue
				}
				t.descent[layer+1]++
				if minHeight == 0 {
					t.filter.falsePositives++
				}
			}
		}
		level = next
	}
	return out, nil
}

// liveValue is e's value, or nil if e has expired.
func (t *table) liveValue(e *entry, now int64) ([]byte, error) {
	if !e.live(now) {
		return nil, nil
	}
	return t.valueOf(e)
}
