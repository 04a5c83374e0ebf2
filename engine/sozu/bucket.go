package sozu

import (
	"encoding/binary"
	"errors"

	"github.com/utxostore/utxostore/engine"
)

// bucket is the decoded form of one bucket of any layer. Entries are kept
// unordered: a bucket is read and written as a whole, so a linear search of
// a few dozen entries costs nothing next to the page I/O.
type bucket struct {
	entries []entry
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

// find returns the position of k's entry, or -1. It compares the keys'
// last 8 bytes before the whole keys: one load rules out nearly every
// other entry, where a 32-byte comparison is a call.
func (b *bucket) find(k *engine.Key) int {
	tail := keyTail(k)
	for i := range b.entries {
		if keyTail(&b.entries[i].key) == tail && b.entries[i].key == *k {
			return i
		}
	}
	return -1
}

// keyTail is the key's last 8 bytes: the layout places keys by their
// first 8, so the neighbours in a bucket differ here.
func keyTail(k *engine.Key) uint64 { return binary.LittleEndian.Uint64(k[engine.KeySize-8:]) }

func (b *bucket) raiseHeight(h uint32) bool {
	if h > b.maxHeight {
		b.maxHeight = h
		return true
	}
	return false
}

func (b *bucket) add(e entry) {
	b.entries = append(b.entries, e)
	b.size += e.encodedSize()
	b.raiseHeight(e.terms.ProducedAt)
}

func (b *bucket) replace(i int, e entry) {
	b.size += e.encodedSize() - b.entries[i].encodedSize()
	b.entries[i] = e
	b.raiseHeight(e.terms.ProducedAt)
}

func (b *bucket) removeAt(i int) entry {
	e := b.entries[i]
	b.size -= e.encodedSize()
	last := len(b.entries) - 1
	b.entries[i] = b.entries[last]
	b.entries[last] = entry{}
	b.entries = b.entries[:last]
	return e
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
