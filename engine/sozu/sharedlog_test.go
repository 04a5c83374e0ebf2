package sozu

import (
	"context"
	"path/filepath"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
)

// A group commit waits for the shards still applying their groups, so one
// fsync covers what they append: the syncer started while another shard
// was busy must cover that shard's later append too.
func TestGroupCommitWaitsForBusyShards(t *testing.T) {
	w, err := createLog(filepath.Join(t.TempDir(), "wal.0"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	a, b := logRecords{shard: 0}, logRecords{shard: 1}
	w.startGroup() // shard 1 is applying its group
	a.logHeight(7)
	endA, err := w.append(&a)
	if err != nil {
		t.Fatal(err)
	}
	synced := make(chan error)
	go func() { synced <- w.syncTo(endA) }()
	b.logHeight(8)
	endB, err := w.append(&b)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-synced:
		t.Fatalf("fsync done (%v) while a shard was still busy", err)
	default:
	}
	w.endGroup()
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	if err := w.syncTo(endB); err != nil {
		t.Fatal(err)
	}
	if n, _ := w.syncCount(); n != 1 {
		t.Fatalf("%d fsyncs for two shards' records appended before the first returned, want 1", n)
	}
}

// A batch whose keys fall in every shard costs one fsync, however the
// shards' groups fall in time: its caller syncs once every shard has
// appended its records.
func TestBatchesOverAllShardsShareFsyncs(t *testing.T) {
	e := openFor(t, t.TempDir(), Options{Sync: engine.SyncAlways})
	defer e.Close()
	const rounds, batch = 20, 64
	before := stats(t, e).LogSyncs
	for round := 0; round < rounds; round++ {
		shards := map[int]bool{}
		for i := round * batch; i < (round+1)*batch; i++ {
			k := enginetest.K(uint64(i))
			shards[e.layout.shard(keyHash(&k))] = true
		}
		if len(shards) != len(e.shards) {
			t.Fatalf("the batch touches %d of %d shards", len(shards), len(e.shards))
		}
		putN(t, e, round*batch, (round+1)*batch, 1)
	}
	n := stats(t, e).LogSyncs - before
	t.Logf("%d fsyncs for %d batches over %d shards", n, rounds, len(e.shards))
	if n != rounds {
		t.Fatalf("%d fsyncs for %d acknowledged batches over %d shards, want one per batch", n, rounds, len(e.shards))
	}
}

// A write its caller makes durable (a batch of Update) is durable before
// a read of its shard runs, even one that runs before the caller's fsync:
// nothing reads a write that is not durable.
func TestReadWaitsForAWriteItsCallerHasNotSynced(t *testing.T) {
	e := openFor(t, t.TempDir(), Options{Sync: engine.SyncAlways})
	defer e.Close()
	s := e.shards[0]
	write := &request{callerSyncs: true, run: func(s *shard) error {
		s.records.logHeight(9)
		return nil
	}}
	if err := s.callRequest(write); err != nil {
		t.Fatal(err)
	}
	if synced := e.log.synced.Load(); synced >= write.end {
		t.Fatalf("the shard synced the log to %d itself, past the write's end %d, which its caller syncs", synced, write.end)
	}
	if err := s.read(func(*shard) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if synced := e.log.synced.Load(); synced < write.end {
		t.Fatalf("a read ran with the log durable to %d; the write it could see ends at %d", synced, write.end)
	}
}

func stats(t *testing.T, e *Engine) Stats {
	t.Helper()
	st, err := e.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Under SyncBlock the log buffers records in memory between block
// boundaries; a crash then loses a tail of the writes, in the order the
// shards made them, never a write in the middle: the survivors are a
// prefix, whichever shards they fell in.
func TestCrashUnderSyncBlockLeavesAPrefix(t *testing.T) {
	dir := t.TempDir()
	o := Options{Sync: engine.SyncBlock}
	e := openFor(t, dir, o)
	const n = 5000 // ~2.7 MB of records: the buffer is written out twice
	for i := 0; i < n; i++ {
		putN(t, e, i, i+1, 500) // one call per write
	}
	e.abandon()
	e = openFor(t, dir, o)
	defer e.Close()
	got, err := e.Get(context.Background(), firstKeys(n))
	if err != nil {
		t.Fatal(err)
	}
	survivors := 0
	for survivors < n && got[survivors] != nil {
		survivors++
	}
	for i := survivors; i < n; i++ {
		if got[i] != nil {
			t.Fatalf("write %d survived the crash but write %d did not", i, survivors)
		}
	}
	if survivors == 0 || survivors == n {
		t.Fatalf("%d of %d writes survived: the test needs the buffer written out in part", survivors, n)
	}
	t.Logf("%d of %d unfsynced writes survived, a prefix", survivors, n)
}

// The write counters (what the benchmark splits its write-amp by) keep
// counting across page checkpoints, which start a new log, and count
// nothing written before Open.
func TestWriteCountersSpanLogGenerations(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions()
	o.CheckpointLogBytes = 1 // every Checkpoint is a page checkpoint
	e := openFor(t, dir, o)
	putN(t, e, 0, 200, 40)
	first := stats(t, e)
	if first.LogBytesWritten != first.WALBytes || first.LogBytesWritten == 0 {
		t.Fatalf("before any page checkpoint: %d log bytes written, the log holds %d", first.LogBytesWritten, first.WALBytes)
	}
	if err := e.Checkpoint(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	putN(t, e, 200, 300, 40)
	second := stats(t, e)
	if second.LogBytesWritten != first.LogBytesWritten+second.WALBytes {
		t.Fatalf("after a page checkpoint: %d log bytes written, want %d before it and %d since",
			second.LogBytesWritten, first.LogBytesWritten, second.WALBytes)
	}
	if second.LogSyncs <= first.LogSyncs || second.LogSyncTime <= first.LogSyncTime {
		t.Fatalf("fsyncs went from %d (%v) to %d (%v) across a page checkpoint",
			first.LogSyncs, first.LogSyncTime, second.LogSyncs, second.LogSyncTime)
	}
	if second.CheckpointBytesWritten != second.CheckpointBytes || second.CheckpointBytes == 0 {
		t.Fatalf("one page checkpoint wrote %d checkpoint bytes, its files hold %d", second.CheckpointBytesWritten, second.CheckpointBytes)
	}
	var byLayer uint64
	for _, l := range second.Layers {
		byLayer += l.PageWrites
	}
	if byLayer != second.PageWrites || byLayer == 0 {
		t.Fatalf("page writes by layer add up to %d of %d", byLayer, second.PageWrites)
	}
	if err := e.Checkpoint(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	putN(t, e, 300, 350, 40)
	e.abandon() // as a killed process would: the log keeps those records

	e = openFor(t, dir, o)
	defer e.Close()
	st := stats(t, e)
	if st.WALBytes == 0 {
		t.Fatal("the reopened store found no log to replay")
	}
	if st.LogBytesWritten != 0 || st.CheckpointBytesWritten != 0 || st.PageWrites != 0 {
		t.Fatalf("a reopened store counts %d log, %d checkpoint and %d page writes it did not make",
			st.LogBytesWritten, st.CheckpointBytesWritten, st.PageWrites)
	}
}

// The bytes on disk are the parts Stats names (and the two small files
// naming the engine and its checkpoint), the log counted by its file:
// after a page checkpoint the next log is written over the same file,
// which keeps the size of the longer log before it.
func TestDiskBytesAreTheirParts(t *testing.T) {
	o := tinyOptions()
	o.CheckpointLogBytes = 16 << 10 // what the file is cut to at a page checkpoint
	e := openFor(t, t.TempDir(), o)
	defer e.Close()
	putN(t, e, 0, 400, 40) // more log than that: the next Checkpoint writes pages
	if err := e.Checkpoint(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	putN(t, e, 400, 410, 40)
	st := stats(t, e)
	if st.LogFileBytes <= st.WALBytes+PageSize {
		t.Fatalf("the log's file holds %d bytes, its records %d: want the file kept at the earlier, longer log's size", st.LogFileBytes, st.WALBytes)
	}
	parts := st.PageFileBytes + st.ValueLogBytes + st.LogFileBytes + st.CheckpointBytes
	if other := st.DiskBytes - parts; other < 0 || other >= PageSize {
		t.Fatalf("%d bytes on disk, %d in pages, value log, log file and checkpoints", st.DiskBytes, parts)
	}
}

// A page checkpoint switches the shards to a new log from inside a
// writing request; the group that request runs in must end on the log it
// started on, or the new log counts busy shards that are not there and
// group commit stops waiting for the shards of a batch.
func TestPageCheckpointLeavesNoShardBusy(t *testing.T) {
	o := tinyOptions()
	o.CheckpointLogBytes = 1
	e := openFor(t, t.TempDir(), o)
	defer e.Close()
	putN(t, e, 0, 100, 40)
	if err := e.Checkpoint(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	e.log.mu.Lock()
	busy := e.log.busy
	e.log.mu.Unlock()
	if busy != 0 {
		t.Fatalf("after a page checkpoint the new log counts %d busy shards", busy)
	}
}

// When the fsync fails, every caller waiting on it returns the failure:
// none waits for an fsync that will not come, and none is told its
// records are durable.
func TestAFailedFsyncFailsEveryCallerWaitingOnIt(t *testing.T) {
	w, err := createLog(filepath.Join(t.TempDir(), "wal.0"), 0)
	if err != nil {
		t.Fatal(err)
	}
	var ends []int64
	for shard := range byte(8) {
		r := logRecords{shard: shard}
		r.logHeight(uint32(shard))
		end, err := w.append(&r)
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, end)
	}
	w.f.Close() // the next write or fsync fails
	errs := make(chan error, len(ends))
	for _, end := range ends {
		go func() { errs <- w.syncTo(end) }()
	}
	for range ends {
		if err := <-errs; err == nil {
			t.Fatal("syncTo returned nil after the log's fsync failed")
		}
	}
	if w.synced.Load() >= ends[0] {
		t.Fatalf("the log counts %d bytes durable after a failed fsync", w.synced.Load())
	}
}

// A caller that finds the log idle yields to the goroutines ready to run
// before its fsync only while other callers commit beside it, so that
// those on their way share the fsync. A lone caller syncs at once: what
// is ready to run then is other work, which would hold its commit for
// its time slices.
func TestOnlyCallersCommittingTogetherYield(t *testing.T) {
	w, err := createLog(filepath.Join(t.TempDir(), "wal.0"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	if err := commitFrom(w, 1, 100); err != nil {
		t.Fatal(err)
	}
	if n, _ := w.syncCount(); n != 100 || w.yields != 0 {
		t.Fatalf("a lone caller's 100 commits took %d fsyncs and yielded before %d", n, w.yields)
	}

	// Two callers are the fewest that share: each one's commit waits for
	// the other's fsync, then yields so the other appends in time.
	if err := commitFrom(w, 2, 200); err != nil {
		t.Fatal(err)
	}
	if w.yields == 0 {
		t.Fatal("two callers committing together never yielded before an fsync")
	}
	n, _ := w.syncCount()
	t.Logf("two callers, 400 commits: %d fsyncs, %d of them after a yield", n-100, w.yields)
}

// commitFrom has callers goroutines commit each records to w at once,
// each a record and the fsync that makes it durable.
func commitFrom(w *writeAheadLog, callers, each int) error {
	var g errgroup.Group
	for range callers {
		g.Go(func() error {
			for i := range each {
				r := logRecords{shard: 0}
				r.logHeight(uint32(i))
				end, err := w.append(&r)
				if err == nil {
					err = w.syncTo(end)
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}
