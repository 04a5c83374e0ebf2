package sozu

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/utxostore/utxostore/engine"
)

// summaryTable fills a table whose keys sink two and three layers deep;
// tail makes each key's last bytes (the fingerprint) from its number.
func summaryTable(t *testing.T, tail func(i uint64) uint64) (*table, []engine.Key) {
	t.Helper()
	o := tinyOptions()
	o.Shards = 1
	tb := newTestTable(t, o)
	var keys []engine.Key
	for i := uint64(0); i < 400; i++ {
		k := mkKey(tail(i), i*0x9E3779B97F4A7C15)
		keys = append(keys, k)
		mustPut(t, tb, k, engine.Terms{ProducedAt: uint32(i)})
	}
	settle(t, tb)
	return tb, keys
}

// pagesRead is the number of pages the lookup of k reads from a cold
// cache, and the layer it finds k in.
func pagesRead(t *testing.T, tb *table, k engine.Key) (uint64, int) {
	t.Helper()
	if err := tb.flush(); err != nil {
		t.Fatal(err)
	}
	before := tb.pages.pageReads
	loc, found, err := tb.locate(&k)
	if err != nil || !found {
		t.Fatalf("key %x: found %v, %v", k[24:], found, err)
	}
	return tb.pages.pageReads - before, loc.layer
}

func TestLookupReadsOnlyTheBucketHoldingTheKey(t *testing.T) {
	tb, keys := summaryTable(t, func(i uint64) uint64 { return i })
	deep := 0
	for _, k := range keys {
		reads, layer := pagesRead(t, tb, k)
		if layer == 0 {
			continue
		}
		if layer >= 2 {
			deep++
		}
		run := tb.pages.runAt(addrOf(uint8(layer), tb.layout.bucketIndex(keyHash(&k), layer)))
		if reads != uint64(len(run.pages())) {
			t.Fatalf("a key of layer %d cost %d page reads; the run holding it has %d pages", layer, reads, len(run.pages()))
		}
	}
	if deep == 0 {
		t.Fatal("no key sank below layer 1: the test proves nothing")
	}
}

func TestFingerprintCollisionsCostReadsNotAnswers(t *testing.T) {
	// Every key has the same fingerprint: no summary can rule a bucket
	// out, so a lookup reads every bucket on its way, and finds its key.
	tb, keys := summaryTable(t, func(i uint64) uint64 { return i << 16 })
	extra := 0
	for _, k := range keys {
		reads, layer := pagesRead(t, tb, k)
		if layer < 2 {
			continue
		}
		h := keyHash(&k)
		own := uint64(len(tb.pages.runAt(addrOf(uint8(layer), tb.layout.bucketIndex(h, layer))).pages()))
		if reads > own {
			extra++
		}
	}
	if extra == 0 {
		t.Fatal("colliding fingerprints spared every read of the buckets above: summaries cannot tell the keys apart")
	}
	// The same holds in a batched read, and after the table is read back
	// with no summary known.
	values, err := tb.get(keys, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range values {
		if v == nil {
			t.Fatalf("key %d not found by a batched read", i)
		}
	}
}

func TestLayerSummariesKeepEveryBucketsFingerprints(t *testing.T) {
	l := newLayerSummaries(65)
	want := map[uint64][]uint16{}
	rng := rand.New(rand.NewPCG(1, 2))
	for step := 0; step < 5000; step++ {
		index := rng.Uint64N(64)
		b := &bucket{maxHeight: uint32(step), hasChildren: step%3 == 0}
		var fps []uint16
		for range rng.IntN(40) {
			k := mkKey(rng.Uint64(), rng.Uint64())
			b.entries = append(b.entries, entry{key: k})
			fps = append(fps, fingerprint(&k))
		}
		l.note(index, b)
		want[index] = fps
		if m := l.of(index); m.maxHeight != uint32(step) || m.hasChildren != (step%3 == 0) {
			t.Fatalf("step %d: summary of bucket %d has height %d, children %v", step, index, m.maxHeight, m.hasChildren)
		}
		// A bucket's new fingerprints must not overwrite another's.
		for i, fps := range want {
			if m := l.of(i); !m.known || !slices.Equal(m.fingerprints, fps) {
				t.Fatalf("step %d: bucket %d summarizes %v, want %v", step, i, m.fingerprints, fps)
			}
		}
	}
	if l.of(64).known {
		t.Fatal("a bucket never noted has a known summary")
	}
	// Room never shrinks, so 64 buckets of fewer than 40 entries hold at
	// most one block of each size from 4 to 64.
	if len(l.fingerprints) > 64*(4+8+16+32+64) {
		t.Fatalf("the fingerprints grew to %d for 64 buckets of fewer than 40 entries", len(l.fingerprints))
	}
	// A block given back by a bucket that outgrew it is the next one of
	// its size handed out.
	l.reset()
	withEntries := func(n int) *bucket {
		b := &bucket{}
		for i := range n {
			b.entries = append(b.entries, entry{key: mkKey(uint64(i), 0)})
		}
		return b
	}
	l.note(0, withEntries(5))
	l.note(0, withEntries(20))
	grown := len(l.fingerprints)
	l.note(1, withEntries(6))
	if len(l.fingerprints) != grown || !l.of(1).known || len(l.of(1).fingerprints) != 6 {
		t.Fatalf("a bucket of 6 entries took new room (%d fingerprints, %d before) beside the 8 its neighbour gave back", len(l.fingerprints), grown)
	}
	l.reset()
	if m := l.of(0); m.known {
		t.Fatal("a summary is known after reset")
	}
}
