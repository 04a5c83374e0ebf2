package sozu

import (
	"encoding/binary"
	"errors"
	"slices"

	"github.com/utxostore/utxostore/engine"
)

// bucket is the decoded form of one bucket of any layer. Entries are kept
// unordered: a bucket is read and written as a whole, so a linear search of
// a few dozen entries costs nothing next to the page I/O, provided it does
// not walk the entries themselves (tags).
type bucket struct {
	entries []entry
	// tags[i] is keyTag(&entries[i].key). find scans tags, 4 bytes an
	// entry in a few cache lines, where the entries (about 100 bytes each)
	// would cost a cache miss apiece: in layer 0 that was the top cost of
	// a lookup. Every change to entries goes through the methods below,
	// which keep tags in step.
	tags []uint32
	// maxHeight is the highest ProducedAt of anything ever placed in this
	// bucket or below it. It only grows; reads filtered by a height above
	// it need not descend.
	maxHeight uint32
	// hasChildren is the bucket's children reference. The children range
	// itself is implied by the hash layout (bucket j of layer i owns buckets
	// j·2^k … j·2^k+2^k−1 of layer i+1); false is the paper's nil: nothing
	// below was ever allocated, so a read stops here.
	hasChildren bool
	// size is the encoded size of the entries, the measure of capacity.
	size int
}

// bucketHeaderMax bounds the encoded bucket header (max height, flags,
// entry count).
const bucketHeaderMax = 5 + 1 + 5

// find returns the position of k's entry, or -1. It compares the tags
// before the whole keys: one load rules out nearly every other entry.
func (b *bucket) find(k *engine.Key) int {
	tag := keyTag(k)
	for i, t := range b.tags {
		if t == tag && b.entries[i].key == *k {
			return i
		}
	}
	return -1
}

// keyTag is the key's last 4 bytes: the layout places keys by their first
// 8, so the neighbours in a bucket differ here.
func keyTag(k *engine.Key) uint32 { return binary.LittleEndian.Uint32(k[engine.KeySize-4:]) }

func (b *bucket) raiseHeight(h uint32) bool {
	if h > b.maxHeight {
		b.maxHeight = h
		return true
	}
	return false
}

func (b *bucket) add(e entry) {
	b.entries = append(b.entries, e)
	b.tags = append(b.tags, keyTag(&e.key))
	b.size += e.encodedSize()
	b.raiseHeight(e.terms.ProducedAt)
}

func (b *bucket) replace(i int, e entry) {
	b.size += e.encodedSize() - b.entries[i].encodedSize()
	b.entries[i] = e
	b.tags[i] = keyTag(&e.key)
	b.raiseHeight(e.terms.ProducedAt)
}

func (b *bucket) removeAt(i int) entry {
	e := b.entries[i]
	b.size -= e.encodedSize()
	last := len(b.entries) - 1
	b.entries[i] = b.entries[last]
	b.entries[last] = entry{}
	b.entries = b.entries[:last]
	b.tags[i] = b.tags[last]
	b.tags = b.tags[:last]
	return e
}

// keep replaces the entries with kept, a slice the bucket then owns, and
// their encoded size.
func (b *bucket) keep(kept []entry, size int) {
	b.entries, b.size = kept, size
	b.tags = b.tags[:0]
	for i := range kept {
		b.tags = append(b.tags, keyTag(&kept[i].key))
	}
}

// clone returns a copy of b whose entries can change without changing b's.
func (b *bucket) clone() *bucket {
	c := *b
	c.entries, c.tags = slices.Clone(b.entries), slices.Clone(b.tags)
	return &c
}

// empty reports whether the bucket carries nothing worth storing: no
// entries and no children (its height then guards nothing).
func (b *bucket) empty() bool { return len(b.entries) == 0 && !b.hasChildren }

func (b *bucket) encode(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(b.maxHeight))
	var flags byte
	if b.hasChildren {
		flags = 1
	}
	dst = append(dst, flags)
	dst = binary.AppendUvarint(dst, uint64(len(b.entries)))
	for i := range b.entries {
		dst = appendEntry(dst, &b.entries[i])
	}
	return dst
}

func decodeBucket(src []byte) (*bucket, error) {
	h, src, err := readUvarint(src)
	if err != nil {
		return nil, err
	}
	if len(src) < 1 {
		return nil, errors.New("bucket header cut short")
	}
	b := &bucket{maxHeight: uint32(h), hasChildren: src[0]&1 != 0}
	n, src, err := readUvarint(src[1:])
	if err != nil {
		return nil, err
	}
	if n > uint64(len(src))/engine.KeySize {
		return nil, errors.New("entry count larger than the bucket")
	}
	b.entries = make([]entry, 0, n)
	b.tags = make([]uint32, 0, n)
	for i := uint64(0); i < n; i++ {
		var e entry
		if e, src, err = decodeEntry(src); err != nil {
			return nil, err
		}
		b.add(e)
	}
	if len(src) != 0 {
		return nil, errors.New("trailing bytes after the last entry")
	}
	b.maxHeight = uint32(h)
	return b, nil
}
