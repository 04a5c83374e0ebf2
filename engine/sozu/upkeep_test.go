package sozu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
)

// A batch's upkeep (writing the oldest dirty buckets out) runs while the
// log syncs, on another goroutine (shard.write). A page write that fails
// there must still fail the batch's call and every later write to the
// shard, and every call acknowledged before it must be there after a
// reopen.
func TestPageWriteFailingDuringTheSyncFailsTheCall(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions()
	o.Sync = engine.SyncAlways
	e := openFor(t, dir, o)
	putN(t, e, 0, 200, 20)
	acknowledged := 200

	// Each shard's page file is swapped for a read-only handle on the
	// same file: reads go on, the next page write fails as a failing
	// disk's would.
	for _, s := range e.shards {
		readOnlyInstead(t, &s.table.pages.f, s.table.pages.path)
	}

	var failure error
	for next := acknowledged; failure == nil; next += 40 {
		if next > 20_000 {
			t.Fatal("20,000 puts and no call failed: a failed page write went unreported, or no write reached the upkeep")
		}
		errs, err := e.Update(context.Background(), putBatch(next, next+40))
		if err != nil {
			failure = err
			break
		}
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		acknowledged = next + 40
	}
	if !errors.Is(failure, syscall.EBADF) {
		t.Fatalf("the failed call's error is not the page write's: %v", failure)
	}
	// The shard that failed refuses every later write (a batch of 64 keys
	// reaches every shard).
	batch := make([]engine.Update, 0, 64)
	for i := range 64 {
		batch = append(batch, engine.Update{Key: enginetest.K(uint64(30_000 + i)), Fn: func([]byte) (engine.Mutation, error) {
			return engine.Mutation{Action: engine.Put, Value: []byte("after")}, nil
		}})
	}
	if _, err := e.Update(context.Background(), batch); err == nil {
		t.Fatal("a shard whose page write failed took further writes")
	}
	if err := e.Close(); err == nil {
		t.Fatal("Close after a failed page write reported no error")
	}

	e = openHolding(t, dir, o, acknowledged)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

// A write that fails in one shard stops the whole store: every later call
// fails with that error, reads of the other shards' keys and of the
// metadata (which shard 0 holds, and a health check reads) included, and
// so does Checkpoint, until the store is reopened with every acknowledged
// write.
func TestAFailedWriteStopsTheWholeStore(t *testing.T) {
	dir, o, e := storeOf200(t, engine.SyncAlways)
	ctx := context.Background()
	acknowledged := 200
	// Only shard 1's page file: its next page write fails, the other
	// shards' writes would not.
	readOnlyInstead(t, &e.shards[1].table.pages.f, e.shards[1].table.pages.path)

	var failure error
	for next := acknowledged; failure == nil; next += 40 {
		if next > 20_000 {
			t.Fatal("20,000 puts and no call failed: the failed page write went unreported")
		}
		errs, err := e.Update(ctx, putBatch(next, next+40))
		if err == nil {
			err = errors.Join(errs...)
		}
		if err != nil {
			failure = err
			break
		}
		acknowledged = next + 40
	}
	if !errors.Is(failure, syscall.EBADF) {
		t.Fatalf("the failed call's error is not the page write's: %v", failure)
	}

	var stopped *StoppedError
	if _, err := e.GetMeta(ctx, "state"); !errors.As(err, &stopped) || !errors.Is(err, syscall.EBADF) {
		t.Errorf("reading the metadata after shard 1 failed a write: %v, want the store stopped by its failure", err)
	}
	keys := firstKeys(acknowledged)
	for _, k := range keys {
		if _, err := e.Get(ctx, []engine.Key{k}); !errors.Is(err, syscall.EBADF) {
			t.Fatalf("reading key %x after shard 1 failed a write: %v, want its failure", k[24:], err)
		}
	}
	if err := e.Checkpoint(ctx, 1); !errors.Is(err, syscall.EBADF) {
		t.Errorf("Checkpoint after a failed write: %v, want its failure", err)
	}
	if err := e.Close(); err == nil {
		t.Fatal("Close after a failed page write reported no error")
	}

	e = openHolding(t, dir, o, acknowledged)
	if got, err := e.GetMeta(ctx, "state"); err != nil || string(got) != "open" {
		t.Errorf("metadata after the reopen: %q, %v", got, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

// putBatch puts 20-byte values under keys from..to-1.
func putBatch(from, to int) []engine.Update {
	var batch []engine.Update
	for i := from; i < to; i++ {
		batch = append(batch, engine.Update{Key: enginetest.K(uint64(i)), Fn: func([]byte) (engine.Mutation, error) {
			return engine.Mutation{Action: engine.Put, Value: make([]byte, 20), Terms: engine.Terms{ProducedAt: uint32(i)}}, nil
		}})
	}
	return batch
}

// A log write that fails at a block boundary (SyncBlock: the Checkpoint
// writes and syncs what the calls buffered) stops the store the same way,
// though no shard's own write failed.
func TestAFailedLogWriteAtACheckpointStopsTheStore(t *testing.T) {
	dir, o, e := storeOf200(t, engine.SyncBlock)
	ctx := context.Background()
	if err := e.Checkpoint(ctx, 1); err != nil {
		t.Fatal(err)
	}
	readOnlyInstead(t, &e.log.f, e.log.path)
	putN(t, e, 200, 210, 20) // buffered: nothing is written yet
	if err := e.Checkpoint(ctx, 2); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("Checkpoint with a log that cannot be written: %v", err)
	}
	if _, err := e.GetMeta(ctx, "state"); !errors.Is(err, syscall.EBADF) {
		t.Errorf("reading the metadata after the log failed: %v, want its failure", err)
	}
	if _, err := e.Get(ctx, firstKeys(1)); !errors.Is(err, syscall.EBADF) {
		t.Errorf("reading a key after the log failed: %v, want its failure", err)
	}
	if err := e.Close(); err == nil {
		t.Fatal("Close after a failed log write reported no error")
	}
	e = openHolding(t, dir, o, 200)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

// A manifest that cannot be written stops the store and leaves both
// generations whole: a failed manifest write may leave either manifest on
// the disk (renamed, then the directory's sync failed), and a reopen must
// find every record under either. A directory in the way of the
// manifest's temporary file makes the write fail; the disk a rename that
// reached it would leave is made by writing the new manifest afterwards.
func TestAFailedManifestWriteStopsTheStore(t *testing.T) {
	for _, renamed := range []bool{false, true} {
		t.Run(fmt.Sprintf("renamed=%v", renamed), func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			o := tinyOptions()
			o.CheckpointLogBytes = 1 // every Checkpoint is a page checkpoint
			e := openFor(t, dir, o)
			putN(t, e, 0, 150, 20)
			pageCheckpoint(t, e)
			putN(t, e, 150, 200, 20)
			inTheWay := filepath.Join(dir, manifestName+".tmp")
			if err := os.Mkdir(inTheWay, 0o755); err != nil {
				t.Fatal(err)
			}
			next := e.gen + 1
			if err := e.Checkpoint(ctx, 2); err == nil {
				t.Fatal("a checkpoint whose manifest cannot be written succeeded")
			}
			var stopped *StoppedError
			if _, err := e.Get(ctx, firstKeys(1)); !errors.As(err, &stopped) {
				t.Fatalf("a read after the manifest failed: %v, want the store stopped", err)
			}
			e.abandon()
			if err := os.Remove(inTheWay); err != nil {
				t.Fatal(err)
			}
			want := next - 1
			if renamed {
				if err := writeManifest(dir, next); err != nil {
					t.Fatal(err)
				}
				want = next
			}
			e = openHolding(t, dir, o, 200)
			defer e.Close()
			if e.gen != want {
				t.Fatalf("reopened at generation %d, want %d", e.gen, want)
			}
		})
	}
}

// storeOf200 opens a store of the tiny tuning under mode holding keys
// 0..199 and the metadata entry state=open.
func storeOf200(t *testing.T, mode engine.SyncMode) (string, Options, *Engine) {
	t.Helper()
	dir := t.TempDir()
	o := tinyOptions()
	o.Sync = mode
	e := openFor(t, dir, o)
	putN(t, e, 0, 200, 20)
	if err := e.PutMeta(context.Background(), "state", []byte("open")); err != nil {
		t.Fatal(err)
	}
	return dir, o, e
}

// readOnlyInstead swaps *f for a read-only handle on path: reads go on,
// the next write fails as a failing disk's would. The writable handle is
// closed when the test ends.
func readOnlyInstead(t *testing.T, f **os.File, path string) {
	t.Helper()
	readOnly, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	writable := *f
	*f = readOnly
	t.Cleanup(func() { writable.Close() })
}
