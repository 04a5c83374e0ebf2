package sozu

import (
	"context"
	"strings"
	"testing"

	"github.com/utxostore/utxostore/engine"
)

// loadForCost fills a store with n records spread over many layer-0 and
// deep buckets and takes a page checkpoint, so later checkpoints start
// from a clean slate.
func loadForCost(t *testing.T, o Options, n int) *Engine {
	t.Helper()
	e := openFor(t, t.TempDir(), o)
	t.Cleanup(func() { e.Close() })
	ctx := context.Background()
	batch := make([]engine.Update, 0, n)
	for i := 0; i < n; i++ {
		batch = append(batch, engine.Update{Key: benchKey(uint32(i)), Fn: putFn(make([]byte, 100), engine.Terms{ProducedAt: uint32(1 + i/500)})})
	}
	if _, err := e.Update(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := e.Checkpoint(ctx, 1); err != nil {
		t.Fatal(err)
	}
	return e
}

func pageWrites(t *testing.T, e *Engine) (uint64, int64) {
	t.Helper()
	st, err := e.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.PageWrites, st.PageFileBytes / PageSize
}

// A page checkpoint after touching k keys writes O(k) pages (each key
// dirties at most one bucket per layer on its path), not the table.
func TestCheckpointWritesWhatChanged(t *testing.T) {
	o := Options{Shards: 2, Layer0Buckets: 64, FanoutBits: 2, Layers: 4, Sync: engine.SyncBlock, CheckpointLogBytes: 1}
	e := loadForCost(t, o, 20_000)
	ctx := context.Background()
	before, total := pageWrites(t, e)
	if total < 500 {
		t.Fatalf("the table spans only %d pages; the test needs a large one", total)
	}
	for _, k := range []int{1, 10, 50} {
		batch := make([]engine.Update, k)
		for i := range batch {
			batch[i] = engine.Update{Key: benchKey(uint32(i * 397)), Fn: putFn(make([]byte, 100), engine.Terms{ProducedAt: 100})}
		}
		if _, err := e.Update(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if err := e.Checkpoint(ctx, 2); err != nil {
			t.Fatal(err)
		}
		after, _ := pageWrites(t, e)
		if w := after - before; w == 0 || w > uint64(k*o.Layers) {
			t.Errorf("touching %d keys wrote %d pages at checkpoint, want 1..%d (table: %d pages)", k, w, k*o.Layers, total)
		}
		before = after
	}
}

// Below CheckpointLogBytes a block boundary only fsyncs the logs: no page
// is written, and a crash right after it loses nothing.
func TestBlockCheckpointWritesNoPages(t *testing.T) {
	o := Options{Shards: 2, Layer0Buckets: 64, FanoutBits: 2, Layers: 4, Sync: engine.SyncBlock}
	e := loadForCost(t, o, 5_000)
	ctx := context.Background()
	before, _ := pageWrites(t, e)
	key := benchKey(7)
	if _, err := e.Update(ctx, []engine.Update{{Key: key, Fn: putFn([]byte("after"), engine.Terms{ProducedAt: 9})}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Checkpoint(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if after, _ := pageWrites(t, e); after != before {
		t.Errorf("a block checkpoint below the log threshold wrote %d pages", after-before)
	}
	dir := e.dir
	e.abandon()
	e = openFor(t, dir, o)
	defer e.Close()
	got, err := e.Get(ctx, []engine.Key{key})
	if err != nil || string(got[0]) != "after" {
		t.Fatalf("after a crash following the block checkpoint: %q, %v", got[0], err)
	}
}

// A store refuses to open with another layout than the one it was created
// with, instead of looking for keys in the wrong buckets.
func TestLayoutMismatchRefused(t *testing.T) {
	o := Options{Shards: 2, Layer0Buckets: 64, FanoutBits: 2, Layers: 4}
	e := loadForCost(t, o, 100)
	dir := e.dir
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	o.Layer0Buckets = 128
	if e, err := Open(dir, o); err == nil {
		e.Close()
		t.Fatal("opened with another layout")
	} else if !strings.Contains(err.Error(), "created with") {
		t.Fatalf("unclear refusal: %v", err)
	}
}
