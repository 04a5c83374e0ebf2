package sozu

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/utxostore/utxostore/engine"
)

// summary is what a lookup needs to know of a bucket as its pages hold
// it, kept in memory so that a key stored deeper costs no read of this
// bucket: the fingerprints of the keys it holds, whether it has children
// and its maximum production height. It is taken whenever the bucket is
// decoded from its pages or written to them, and is unknown until then
// (open starts with none known). A fingerprint may match a key the bucket
// does not hold (2^-16 per entry): that costs a read, never a wrong
// answer.
//
// A summary is a view into its layer's summaries (layerSummaries), valid
// until the next summary of the layer is noted.
type summary struct {
	fingerprints []uint16
	maxHeight    uint32
	hasChildren  bool
	known        bool
}

// fingerprint is a key's last two bytes: keys are uniform (layout.go),
// and the layout places a key by its first eight, so these are
// independent of the bucket.
func fingerprint(k *engine.Key) uint16 { return binary.BigEndian.Uint16(k[engine.KeySize-2:]) }

func (m *summary) mayHold(k *engine.Key) bool {
	return slices.Contains(m.fingerprints, fingerprint(k))
}

// summarizedBuckets bounds the layers that keep summaries: those of at
// most this many buckets per shard (20 bytes each plus 2 to 4 per entry).
// At the default layout that is layers 1 and 2, the layers a lookup of a
// deep record passes through; layer 3's million buckets per shard would
// cost 80 MiB across four shards and spare only reads of keys below it.
const summarizedBuckets = 1 << 17

// layerSummaries holds the summaries of one layer's buckets without a
// pointer per bucket: a slot per bucket, and every bucket's fingerprints
// in one shared array, each in a block of a power of two of them. Half a
// million summaries with a slice each were as many objects for the
// garbage collector to find at every cycle, the largest share of the
// heap's objects at ten million records.
type layerSummaries struct {
	slots        []summarySlot
	fingerprints []uint16
	// free lists the blocks given back, by the log2 of their size.
	free [33][]uint32
}

// summarySlot is one bucket's summary; its fingerprints are
// fingerprints[at:at+count] of its layer, in a block of room.
type summarySlot struct {
	at, count, room uint32
	maxHeight       uint32
	hasChildren     bool
	known           bool
}

func newLayerSummaries(buckets uint64) *layerSummaries {
	return &layerSummaries{slots: make([]summarySlot, buckets)}
}

// reset forgets every summary.
func (l *layerSummaries) reset() {
	clear(l.slots)
	l.fingerprints = l.fingerprints[:0]
	for i := range l.free {
		l.free[i] = l.free[i][:0]
	}
}

func (l *layerSummaries) of(index uint64) summary {
	m := &l.slots[index]
	if !m.known {
		return summary{}
	}
	return summary{fingerprints: l.fingerprints[m.at : m.at+m.count], maxHeight: m.maxHeight, hasChildren: m.hasChildren, known: true}
}

// note records b as the stored state of the bucket at index.
func (l *layerSummaries) note(index uint64, b *bucket) {
	m := &l.slots[index]
	if n := uint32(len(b.entries)); n > m.room {
		if m.room > 0 {
			l.free[bits.Len32(m.room-1)] = append(l.free[bits.Len32(m.room-1)], m.at)
		}
		m.at, m.room = l.block(n)
	}
	m.count = uint32(len(b.entries))
	for i := range b.entries {
		l.fingerprints[m.at+uint32(i)] = fingerprint(&b.entries[i].key)
	}
	m.maxHeight, m.hasChildren, m.known = b.maxHeight, b.hasChildren, true
}

// block returns the start and size of a free block for n fingerprints:
// a given-back one of the right size, or new room at the end.
func (l *layerSummaries) block(n uint32) (at, room uint32) {
	class := bits.Len32(max(n, 4) - 1)
	room = 1 << class
	if free := l.free[class]; len(free) > 0 {
		at = free[len(free)-1]
		l.free[class] = free[:len(free)-1]
		return at, room
	}
	at = uint32(len(l.fingerprints))
	l.fingerprints = slices.Grow(l.fingerprints, int(room))[:at+room]
	return at, room
}

func (l *layerSummaries) bytes() int64 {
	n := int64(len(l.slots))*int64(unsafe.Sizeof(summarySlot{})) + int64(cap(l.fingerprints))*2
	for _, f := range l.free {
		n += int64(cap(f)) * 4
	}
	return n
}

// summarize makes the store keep summaries for the layers l summarizes.
func (s *pageStore) summarize(l layout) {
	s.summaries = make([]*layerSummaries, l.layers)
	for layer := 1; layer < l.layers; layer++ {
		if l.summarized(layer) {
			s.summaries[layer] = newLayerSummaries(l.bucketsIn(layer))
		}
	}
}

// summaryBytes is the memory the summaries take.
func (s *pageStore) summaryBytes() int64 {
	var n int64
	for _, layer := range s.summaries {
		if layer != nil {
			n += layer.bytes()
		}
	}
	return n
}

// summaryOf is the summary of the bucket at addr as stored; it is not
// known when the layer keeps none or the bucket was not seen yet.
func (s *pageStore) summaryOf(addr bucketAddr) summary {
	if l := s.layerSummaries(addr); l != nil {
		return l.of(addr.index())
	}
	return summary{}
}

// noteSummary records b as the stored state of the bucket at addr.
func (s *pageStore) noteSummary(addr bucketAddr, b *bucket) {
	if l := s.layerSummaries(addr); l != nil {
		l.note(addr.index(), b)
	}
}

func (s *pageStore) layerSummaries(addr bucketAddr) *layerSummaries {
	if int(addr.layer()) >= len(s.summaries) {
		return nil
	}
	return s.summaries[addr.layer()]
}
