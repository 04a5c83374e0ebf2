package sozu

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"

	metro "github.com/dgryski/go-metro"
	cuckoo "github.com/seiflotfy/cuckoofilter"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
	"github.com/utxostore/utxostore/engine/internal/termindex"
)

// A reopened store takes its filter, indexes and counters from the
// checkpoint, reading only layer 0's pages, and they are exactly what
// deriving them from every bucket gives.
func TestReopenTakesTheDerivedStateFromTheCheckpoint(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions()
	e := openFor(t, dir, o)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 8))
	// Records of every kind: small and out-of-line values (InlineMax is
	// 150), terms for each index, overwrites and removals.
	for round := range 40 {
		var batch []engine.Update
		for range 50 {
			k := enginetest.K(rng.Uint64N(600))
			size := 20 + rng.IntN(300)
			terms := engine.Terms{ProducedAt: uint32(round)}
			switch rng.IntN(4) {
			case 0:
				terms.DeleteAtHeight = uint32(1000 + round)
			case 1:
				terms.UnminedSince = uint32(round + 1)
			case 2:
				terms.PreserveUntil = uint32(2000 + round)
			}
			remove := rng.IntN(8) == 0
			batch = append(batch, engine.Update{Key: k, Fn: func([]byte) (engine.Mutation, error) {
				if remove {
					return engine.Mutation{Action: engine.Remove}, nil
				}
				return engine.Mutation{Action: engine.Put, Value: bytes.Repeat([]byte{byte(size)}, size), Terms: terms}, nil
			}})
		}
		if _, err := e.Update(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if err := e.Checkpoint(ctx, uint32(round)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	e = openFor(t, dir, o)
	defer e.Close()
	for _, s := range e.shards {
		tb := s.table
		var layer0Pages uint64
		tb.pages.runs(func(r *run) error {
			if r.layer == 0 {
				layer0Pages += uint64(len(r.pages()))
			}
			return nil
		})
		if tb.pages.pageReads != layer0Pages {
			t.Errorf("shard %d: opening read %d pages; layer 0 has %d, and nothing else needs reading", s.id, tb.pages.pageReads, layer0Pages)
		}
		stored := struct {
			layers  []layerCounters
			indexes *termindex.Indexes
			live    int64
			count   uint
			filter  *cuckoo.Filter
		}{tb.layers, tb.indexes, tb.values.live, tb.filter.f.Count(), tb.filter.f}
		var entries int64
		for _, c := range tb.layers {
			entries += c.entries
		}
		if entries == 0 {
			t.Fatalf("shard %d holds no entries: the test stores too little", s.id)
		}
		tb.layers = make([]layerCounters, len(tb.layers))
		tb.indexes = termindex.New()
		tb.values.live = 0
		if err := tb.rebuild(entries); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(stored.layers, tb.layers) {
			t.Errorf("shard %d: stored layer counters %+v, derived %+v", s.id, stored.layers, tb.layers)
		}
		if !reflect.DeepEqual(stored.indexes, tb.indexes) {
			t.Errorf("shard %d: stored indexes differ from the derived ones", s.id)
		}
		if stored.live != tb.values.live {
			t.Errorf("shard %d: stored %d live value bytes, derived %d", s.id, stored.live, tb.values.live)
		}
		if stored.count != tb.filter.f.Count() {
			t.Errorf("shard %d: stored filter holds %d keys, derived %d", s.id, stored.count, tb.filter.f.Count())
		}
		// A key the stored filter lacked would be taken for absent.
		tb.walk(func(_ int, b *bucket, _ bool) error {
			for i := range b.entries {
				if k := b.entries[i].key; !stored.filter.Lookup(k[:]) {
					t.Errorf("shard %d: the stored filter does not hold key %x", s.id, k)
				}
			}
			return nil
		})
	}
}

// A store reopened with a larger FilterKeys gets a filter of that size,
// not the smaller one its checkpoint stored.
func TestLargerFilterSettingIsHonouredOnReopen(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions()
	o.Shards = 1
	const n = 300
	writeAndClose(t, dir, o, n, 40)
	stored := openFor(t, dir, o)
	before := stored.shards[0].table.filter.capacity
	if err := stored.Close(); err != nil {
		t.Fatal(err)
	}

	o.FilterKeys = int(before) * 4
	e := openFor(t, dir, o)
	defer e.Close()
	if got := e.shards[0].table.filter.capacity; got < uint(o.FilterKeys) {
		t.Fatalf("filter capacity %d after reopening with FilterKeys %d (stored %d)", got, o.FilterKeys, before)
	}
	expectPutN(t, e, n, 40)
}

// writeAndClose creates a store in dir holding putN's first n records of
// size bytes, and closes it.
func writeAndClose(t *testing.T, dir string, o Options, n, size int) {
	t.Helper()
	e := openFor(t, dir, o)
	putN(t, e, 0, n, size)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

// expectPutN checks that e holds putN's first n records of size bytes.
func expectPutN(t *testing.T, e *Engine, n, size int) {
	t.Helper()
	values, err := e.Get(context.Background(), firstKeys(n))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range values {
		if !bytes.Equal(v, bytes.Repeat([]byte{byte(i)}, size)) {
			t.Fatalf("key %d read back as %d bytes, want %d", i, len(v), size)
		}
	}
}

// metroHasher hashes keys as the filter library does by default, with the
// library's seed (1337) or another, which stands for a release of the
// library that changed its hash.
type metroHasher uint64

func (seed metroHasher) Hash64(data []byte) uint64 { return metro.Hash64(data, uint64(seed)) }

// A checkpoint's filter places keys by the filter library's hash. Under a
// library whose hash changed, the stored filter would answer "no" for keys
// it holds, so reads would miss them and creates would add them twice;
// Open sees the hash's fingerprint differ and rebuilds the filter from the
// pages instead.
func TestFilterIsRebuiltWhenTheLibrarysHashChanges(t *testing.T) {
	const n = 500
	o := tinyOptions()
	o.Shards = 1
	dir := t.TempDir()
	writeAndClose(t, dir, o, n, 20)
	gen, err := readManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := checkpointPath(dir, 0, gen)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if img, err := decodeCheckpoint(path, data, newLayout(o)); err != nil || img.derived == nil {
		t.Fatalf("the checkpoint holds no filter to trust (%v): nothing to test", err)
	}

	cuckoo.SetDefaultHasher(metroHasher(42))
	defer cuckoo.SetDefaultHasher(metroHasher(1337))
	e := openFor(t, dir, o)
	defer e.Close()
	expectPutN(t, e, n, 20)
	ctx := context.Background()
	for i, k := range firstKeys(n) {
		if err := e.CreateOnly(ctx, k, []byte("again"), 0); !errors.Is(err, engine.ErrExists) {
			t.Fatalf("CreateOnly of stored key %d under the changed hash: %v, want ErrExists", i, err)
		}
	}
	records := 0
	if err := e.ForEach(ctx, func(engine.Key, []byte) error { records++; return nil }); err != nil {
		t.Fatal(err)
	}
	if records != n {
		t.Fatalf("%d records after creating each of %d again, want %d", records, n, n)
	}
}
