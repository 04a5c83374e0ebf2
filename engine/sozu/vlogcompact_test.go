package sozu

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
)

// largeValue is the version-th value of key i: out of line at every
// tuning these tests use, and different for every version.
func largeValue(i, version int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("key %d version %d;", i, version)), 60)
}

// putLarge puts version of the keys from..to-1.
func putLarge(t *testing.T, e *Engine, from, to, version int) {
	t.Helper()
	updates := make([]engine.Update, 0, to-from)
	for i := from; i < to; i++ {
		v := largeValue(i, version)
		updates = append(updates, engine.Update{Key: enginetest.K(uint64(i)), Fn: func([]byte) (engine.Mutation, error) {
			return engine.Mutation{Action: engine.Put, Value: v}, nil
		}})
	}
	errs, err := e.Update(context.Background(), updates)
	if err = errors.Join(append(errs, err)...); err != nil {
		t.Fatal(err)
	}
}

// rewriteLarge puts version of every key 0..n-1, then checkpoints.
func rewriteLarge(t *testing.T, e *Engine, n, version int) {
	t.Helper()
	putLarge(t, e, 0, n, version)
	if err := e.Checkpoint(context.Background(), uint32(version)); err != nil {
		t.Fatal(err)
	}
}

// checkLarge reads every key and expects version.
func checkLarge(t *testing.T, e *Engine, n, version int) {
	t.Helper()
	keys := make([]engine.Key, n)
	for i := range keys {
		keys[i] = enginetest.K(uint64(i))
	}
	got, err := e.Get(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if !bytes.Equal(v, largeValue(i, version)) {
			t.Fatalf("key %d: %.40q, want version %d", i, v, version)
		}
	}
}

// checkLargeAcrossReopen checks every key's version, closes e, reopens
// the store, checks again and returns it open.
func checkLargeAcrossReopen(t *testing.T, e *Engine, dir string, o Options, n, version int) *Engine {
	t.Helper()
	checkLarge(t, e, n, version)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openFor(t, dir, o)
	checkLarge(t, e, n, version)
	return e
}

func valueLogFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "shard-*.vlog*"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestValueLogIsCompacted rewrites large records many times: the value
// logs' garbage is reclaimed at page checkpoints (the files stay within
// twice the live values plus the allowed garbage, where they would hold
// every version), the compacted files replace the old ones, and every
// record reads its latest version, before and after a reopen.
func TestValueLogIsCompacted(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions()
	o.ValueLogGarbageBytes = 64 << 10
	o.CheckpointLogBytes = 1 // every Checkpoint is a page checkpoint
	e := openFor(t, dir, o)
	const keys, versions = 200, 40
	for v := 1; v <= versions; v++ {
		rewriteLarge(t, e, keys, v)
	}
	st, err := e.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	live := st.ValueLogBytes - st.ValueLogGarbage
	written := int64(keys*versions) * int64(vlogHeaderSize+len(largeValue(0, 1)))
	t.Logf("value logs %d bytes, %d live, %d compactions; %d bytes written to them", st.ValueLogBytes, live, st.ValueLogCompactions, written)
	if st.ValueLogCompactions == 0 {
		t.Fatal("no value log was compacted")
	}
	if limit := 2*live + int64(o.Shards)*int64(o.ValueLogGarbageBytes); st.ValueLogBytes > limit {
		t.Errorf("value logs hold %d bytes for %d live: over %d", st.ValueLogBytes, live, limit)
	}
	if files := valueLogFiles(t, dir); len(files) != o.Shards {
		t.Errorf("value log files %v: want one per shard", files)
	}
	e = checkLargeAcrossReopen(t, e, dir, o, keys, versions)
	defer e.Close()
	after := stats(t, e)
	if after.ValueLogBytes != st.ValueLogBytes || after.ValueLogGarbage != st.ValueLogGarbage {
		t.Errorf("reopened: value logs %d bytes, %d garbage; before closing %d, %d",
			after.ValueLogBytes, after.ValueLogGarbage, st.ValueLogBytes, st.ValueLogGarbage)
	}
}

// TestCompactedValuesInBufferedChanges compacts while the latest versions
// of deep records wait in the change buffer, whose entries a page
// checkpoint stores as they are: their pointers must follow the copies.
func TestCompactedValuesInBufferedChanges(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions()
	o.ValueLogGarbageBytes = 16 << 10
	o.CheckpointLogBytes = 1
	o.ChangeBufferBytes = 64 << 20 // every deep layer buffers
	e := openFor(t, dir, o)
	const keys = 300
	for v := 1; v <= 30; v++ {
		rewriteLarge(t, e, keys, v)
	}
	if st := stats(t, e); st.BufferedBuckets == 0 || st.ValueLogCompactions == 0 {
		t.Fatalf("%d buckets with buffered changes, %d compactions: the test needs both", st.BufferedBuckets, st.ValueLogCompactions)
	}
	checkLargeAcrossReopen(t, e, dir, o, keys, 30).Close()
}

// TestUnfinishedCompactionIsDiscarded: a crash after a compaction wrote
// its file but before the manifest named its checkpoint leaves a value log
// the current checkpoint does not name. Open deletes it and reads from the
// file it names.
func TestUnfinishedCompactionIsDiscarded(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions()
	e := openFor(t, dir, o)
	rewriteLarge(t, e, 50, 1)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	leftover := valueLogPath(dir, 0, 99)
	if err := os.WriteFile(leftover, []byte("half a compaction"), 0o644); err != nil {
		t.Fatal(err)
	}
	e = openFor(t, dir, o)
	defer e.Close()
	if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("leftover value log %s: %v, want it deleted", leftover, err)
	}
	checkLarge(t, e, 50, 1)
}

// oneShardCompacting is the tiny tuning with one shard, a page checkpoint
// at every Checkpoint, and compactions from 1 KiB of garbage.
func oneShardCompacting() Options {
	o := tinyOptions()
	o.Shards = 1
	o.ValueLogGarbageBytes = 1 << 10
	o.CheckpointLogBytes = 1
	return o
}

// storeWithGarbage is a one-shard store whose value log holds records
// 0..9 (keys 0..9 at version 1, 1,000 bytes each, then checkpointed),
// 10..18 and 19..27 (keys 1..9 at versions 2 and 3): key 0's record stays
// live at offset 0, and the garbage outweighs the live values, so the
// next page checkpoint compacts. Every record is in the file (the value
// log's buffer written out), where the tests damage them.
func storeWithGarbage(t *testing.T) (string, Options, *Engine) {
	dir, o := t.TempDir(), oneShardCompacting()
	e := openFor(t, dir, o)
	rewriteLarge(t, e, 10, 1)
	putLarge(t, e, 1, 10, 2)
	putLarge(t, e, 1, 10, 3)
	if err := e.shards[0].do(func(s *shard) error { return s.table.values.flush() }); err != nil {
		t.Fatal(err)
	}
	return dir, o, e
}

// TestDamagedValueStopsCompaction: a live value whose checksum fails is
// not copied. The page checkpoint reports the damage, and the store on
// disk stays as the previous checkpoint left it.
func TestDamagedValueStopsCompaction(t *testing.T) {
	dir, o, e := storeWithGarbage(t)
	flipByte(t, valueLogPath(dir, 0, 0), vlogHeaderSize+100)
	err := e.Checkpoint(context.Background(), 2)
	var corrupt *engine.CorruptionError
	if !errors.As(err, &corrupt) {
		t.Fatalf("checkpoint compacting a damaged value: %v, want a CorruptionError", err)
	}
	t.Logf("refused: %v", err)
	e.Close()
	if files := valueLogFiles(t, dir); len(files) != 1 || files[0] != valueLogPath(dir, 0, 0) {
		t.Errorf("value log files %v: want the first one only", files)
	}
	// Reopened, the log replays versions 2 and 3 over the last checkpoint:
	// every record but the damaged one reads its latest version, and the
	// damaged one is reported, not returned.
	e = openFor(t, dir, o)
	defer e.Close()
	for i := 1; i < 10; i++ {
		got, err := e.Get(context.Background(), []engine.Key{enginetest.K(uint64(i))})
		if err != nil || !bytes.Equal(got[0], largeValue(i, 3)) {
			t.Errorf("key %d after reopening: %.40q, %v; want version 3", i, got, err)
		}
	}
	if _, err := e.Get(context.Background(), []engine.Key{enginetest.K(0)}); !errors.As(err, &corrupt) {
		t.Errorf("damaged key after reopening: %v, want a CorruptionError", err)
	}
}

// TestDamagedFramingStopsCompaction: a garbage record whose length was
// damaged so that it swallows the live record after it would make the scan
// miss that record, which would be lost with the old file. Compaction
// counts the live bytes it found against those the entries point at and
// refuses instead.
func TestDamagedFramingStopsCompaction(t *testing.T) {
	dir, o, e := storeWithGarbage(t)
	const record = vlogHeaderSize + 960
	if n := len(largeValue(9, 1)); n != 960 {
		t.Fatalf("values of %d bytes: the offsets below assume 960", n)
	}
	// Record 18 (key 9's version 2, garbage) now claims record 19 (key
	// 1's live version 3).
	f, err := os.OpenFile(valueLogPath(dir, 0, 0), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	length := binary.LittleEndian.AppendUint32(nil, 960+record)
	if _, err := f.WriteAt(length, 18*record+4); err != nil {
		t.Fatal(err)
	}
	f.Close()
	err = e.Checkpoint(context.Background(), 2)
	var corrupt *engine.CorruptionError
	if !errors.As(err, &corrupt) {
		t.Fatalf("checkpoint compacting a value log with damaged framing: %v, want a CorruptionError", err)
	}
	t.Logf("refused: %v", err)
	e.Close()
	e = openFor(t, dir, o)
	defer e.Close()
	checkLarge(t, e, 1, 1)
	for i := 1; i < 10; i++ {
		got, err := e.Get(context.Background(), []engine.Key{enginetest.K(uint64(i))})
		if err != nil || !bytes.Equal(got[0], largeValue(i, 3)) {
			t.Errorf("key %d after reopening: %.40q, %v; want version 3", i, got, err)
		}
	}
}

// TestCompactionOfManyRecordsSettlesOnTheWay compacts more live records
// than the cache settles after (1,024), with a tiny dirty budget: the
// buckets written out halfway hold repointed and not yet repointed
// entries, and the final state must hold every record's copy.
func TestCompactionOfManyRecordsSettlesOnTheWay(t *testing.T) {
	dir, o := t.TempDir(), oneShardCompacting()
	e := openFor(t, dir, o)
	const keys = 2500
	for v := 1; v <= 3; v++ {
		rewriteLarge(t, e, keys, v)
	}
	if st := stats(t, e); st.ValueLogCompactions != 1 || st.ValueLogGarbage != 0 {
		t.Fatalf("%d compactions, %d bytes of garbage: want one compaction of everything", st.ValueLogCompactions, st.ValueLogGarbage)
	}
	checkLargeAcrossReopen(t, e, dir, o, keys, 3).Close()
}
