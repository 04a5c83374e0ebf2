package sozu

import (
	"bytes"
	"context"
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
)

// TestValueLogWritesInBuffers: out-of-line values reach the value log's
// file a buffer at a time, not one write each. Values not yet written
// read from memory, and a crash (the store abandoned without a
// checkpoint) loses none: the write-ahead log holds them.
func TestValueLogWritesInBuffers(t *testing.T) {
	dir := t.TempDir()
	o := oneShardCompacting()
	o.ValueLogGarbageBytes = 1 << 30 // no compaction: the file only grows
	o.ValueLogBufferBytes = 8 << 10
	e := openFor(t, dir, o)
	appended := func(n int) (bytes int64) {
		for i := range n {
			bytes += int64(vlogHeaderSize + len(largeValue(i, 1)))
		}
		return bytes
	}
	fileSize := func() int64 {
		t.Helper()
		st, err := os.Stat(valueLogPath(dir, 0, 0))
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}

	putLarge(t, e, 0, 5, 1) // 5 KB: less than a buffer
	if n := fileSize(); n != 0 {
		t.Fatalf("value log file holds %d bytes after five values: want none before its buffer fills", n)
	}
	checkLarge(t, e, 5, 1)

	putLarge(t, e, 5, 40, 1) // 40 KB: four buffers written
	if n := fileSize(); n < 3*int64(o.ValueLogBufferBytes) || n >= appended(40) {
		t.Fatalf("value log file holds %d bytes of %d appended: want the full buffers (at least 3 of %d bytes) and not the last", n, appended(40), o.ValueLogBufferBytes)
	}
	checkLarge(t, e, 40, 1) // from the file, the previous buffer and the current one

	e.abandon()
	e = openFor(t, dir, o)
	defer e.Close()
	checkLarge(t, e, 40, 1)
}

// TestAFailedValueLogWriteStopsTheStore: a full value-log buffer is
// written beside the shard, and the write's failure still stops the store
// (at the next full buffer), fails the checkpoint and Close, and loses no
// acknowledged value: the reopened store holds them all from the
// write-ahead log.
func TestAFailedValueLogWriteStopsTheStore(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions()
	o.Shards = 1
	o.Sync = engine.SyncAlways
	o.ValueLogGarbageBytes = 1 << 30 // no compaction: the file only grows
	o.ValueLogBufferBytes = 8 << 10
	e := openFor(t, dir, o)
	ctx := context.Background()
	putLarge(t, e, 0, 5, 1)
	values := e.shards[0].table.values
	readOnlyInstead(t, &values.f, values.path)

	acknowledged := 5
	var failure error
	for next := acknowledged; failure == nil; next += 5 {
		if next > 1000 {
			t.Fatal("a thousand values, a hundred buffers, and no call failed: the failed value-log write went unreported")
		}
		var updates []engine.Update
		for i := next; i < next+5; i++ {
			v := largeValue(i, 1)
			updates = append(updates, engine.Update{Key: enginetest.K(uint64(i)), Fn: func([]byte) (engine.Mutation, error) {
				return engine.Mutation{Action: engine.Put, Value: v}, nil
			}})
		}
		errs, err := e.Update(ctx, updates)
		if failure = errors.Join(append(errs, err)...); failure == nil {
			acknowledged = next + 5
		}
	}
	if !errors.Is(failure, syscall.EBADF) {
		t.Fatalf("the failed call's error is not the value-log write's: %v", failure)
	}
	var stopped *StoppedError
	if _, err := e.Get(ctx, []engine.Key{enginetest.K(0)}); !errors.As(err, &stopped) {
		t.Errorf("a read after the failed value-log write: %v, want the store stopped", err)
	}
	if err := e.Checkpoint(ctx, 1); !errors.Is(err, syscall.EBADF) {
		t.Errorf("Checkpoint after a failed value-log write: %v, want its failure", err)
	}
	if err := e.Close(); err == nil {
		t.Fatal("Close after a failed value-log write reported no error")
	}

	e = openFor(t, dir, o)
	defer e.Close()
	checkLarge(t, e, acknowledged, 1)
}

// TestPatchOfABufferedValueAppendsNothing: a patch of an out-of-line
// value whose record the value log holds only in memory (appended since
// its buffer was last written) rewrites that record in place: the value
// log grows by nothing and holds no more garbage, and the value reads
// back patched. A crash loses nothing, the write-ahead log rebuilding the
// value as it does every value past the checkpoint's length of the value
// log. A value the file holds (here after a page checkpoint) is appended
// anew, and its copy, in memory, is then patched in place again.
func TestPatchOfABufferedValueAppendsNothing(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions()
	o.Shards = 1
	o.ValueLogBufferBytes = 1 << 20  // every value stays in the buffer until a page checkpoint
	o.ValueLogGarbageBytes = 1 << 30 // no compaction
	o.CheckpointLogBytes = 1         // every Checkpoint is a page checkpoint
	const n = 20                     // spentValue: the odd keys' values are out of line
	write := func(e *Engine, round int) {
		t.Helper()
		batch := make([]engine.Update, n)
		for i := range batch {
			batch[i] = engine.Update{Key: enginetest.K(uint64(i)), Fn: func(current []byte) (engine.Mutation, error) {
				if round == 0 {
					return engine.Mutation{Action: engine.Put, Value: spentValue(i, 0)}, nil
				}
				return engine.Mutation{Action: engine.Patch, Edits: spendPatch(i, round, len(current))}, nil
			}}
		}
		errs, err := e.Update(context.Background(), batch)
		if err = errors.Join(append(errs, err)...); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	check := func(e *Engine, round int) {
		t.Helper()
		got, err := e.Get(context.Background(), firstKeys(n))
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range got {
			if !bytes.Equal(v, spentValue(i, round)) {
				t.Fatalf("key %d holds %d bytes that are not the %d of round %d", i, len(v), len(spentValue(i, round)), round)
			}
		}
	}
	type sizes struct{ bytes, garbage int64 }
	valueLog := func(e *Engine) sizes {
		st := stats(t, e)
		return sizes{st.ValueLogBytes, st.ValueLogGarbage}
	}
	record := int64(vlogHeaderSize + len(spentValue(1, 0)))

	e := openFor(t, dir, o)
	write(e, 0)
	put := valueLog(e)
	if want := (sizes{n / 2 * record, 0}); put != want {
		t.Fatalf("value log after the puts: %+v, want %+v", put, want)
	}
	for round := 1; round <= 3; round++ {
		write(e, round)
		if got := valueLog(e); got != put {
			t.Fatalf("round %d of patches of buffered values: value log %+v, was %+v: want nothing appended", round, got, put)
		}
	}
	check(e, 3)

	e.abandon()
	e = openFor(t, dir, o)
	check(e, 3)
	// The replay appends the puts and rewrites them in place as well.
	if got := valueLog(e); got != put {
		t.Fatalf("value log after the replay: %+v, want %+v", got, put)
	}
	ro := o
	ro.ReadOnly = true
	r := openFor(t, dir, ro)
	check(r, 3)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	pageCheckpoint(t, e) // the values reach the file
	inFile := valueLog(e)
	write(e, 4)
	appended := valueLog(e)
	if want := (sizes{inFile.bytes + n/2*record, inFile.garbage + n/2*record}); appended != want {
		t.Fatalf("patches of values in the file: value log %+v, want %+v: each appended whole", appended, want)
	}
	write(e, 5)
	if got := valueLog(e); got != appended {
		t.Fatalf("patches of the appended copies: value log %+v, was %+v: want nothing appended", got, appended)
	}
	check(e, 5)

	e.abandon()
	e = openFor(t, dir, o)
	defer e.Close()
	check(e, 5)
	// The replay patched the checkpoint's values by appending, leaving
	// the file's records (the patch records' base) as they were.
	if got := valueLog(e); got != appended {
		t.Fatalf("value log after the replay: %+v, want %+v", got, appended)
	}
}
