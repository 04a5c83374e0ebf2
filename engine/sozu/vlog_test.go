package sozu

import (
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
