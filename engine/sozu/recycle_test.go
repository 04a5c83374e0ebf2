package sozu

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
)

// recycleOptions takes a page checkpoint at every Checkpoint, so every
// Checkpoint retires a log and starts one.
func recycleOptions() Options {
	o := tinyOptions()
	o.CheckpointLogBytes = 1
	return o
}

func checkpointAt(t *testing.T, e *Engine, height uint32) {
	t.Helper()
	if err := e.Checkpoint(context.Background(), height); err != nil {
		t.Fatal(err)
	}
}

func fileOf(t *testing.T, path string) os.FileInfo {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestLogFilesAreRecycled: the log a page checkpoint retires is kept as
// the spare and becomes the log of the generation after next, the same
// file with the blocks it already has.
func TestLogFilesAreRecycled(t *testing.T) {
	dir := t.TempDir()
	e := openFor(t, dir, recycleOptions())
	defer e.Close()
	putN(t, e, 0, 200, 100)
	first := fileOf(t, logPath(dir, e.gen))
	checkpointAt(t, e, 1)
	if !os.SameFile(first, fileOf(t, filepath.Join(dir, spareLogName))) {
		t.Fatal("the retired log is not the spare")
	}
	putN(t, e, 200, 210, 100)
	checkpointAt(t, e, 2)
	current := fileOf(t, logPath(dir, e.gen))
	if !os.SameFile(first, current) {
		t.Fatal("the log of the generation after next is not the recycled file")
	}
	if current.Size() <= e.log.written() {
		t.Fatalf("recycled log of %d bytes for %d written: nothing left of its old content to test against", current.Size(), e.log.written())
	}
}

// TestRecycledLogReplaysOnlyItsGeneration: a crash while the log is a
// recycled file with the retired generation's records after the new ones
// replays the new ones, reports nothing dropped (the end marker ends the
// log), and reads none of the old ones.
func TestRecycledLogReplaysOnlyItsGeneration(t *testing.T) {
	dir := t.TempDir()
	o := recycleOptions()
	e := openFor(t, dir, o)
	putN(t, e, 0, 300, 100) // a long log, to be recycled
	checkpointAt(t, e, 1)
	checkpointAt(t, e, 2) // the current log is now that file
	// Delete what the recycled file's old records put: replaying one of
	// them would bring a key back.
	if err := e.Delete(context.Background(), firstKeys(300)); err != nil {
		t.Fatal(err)
	}
	putN(t, e, 1000, 1010, 100)
	e.abandon()

	e = openFor(t, dir, o)
	defer e.Close()
	st := stats(t, e)
	if st.Recovery.DroppedBytes != 0 || st.Recovery.ReplayedRecords == 0 {
		t.Fatalf("recovery report %+v: want records replayed and nothing dropped", st.Recovery)
	}
	got, err := e.Get(context.Background(), firstKeys(300))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != nil {
			t.Fatalf("key %d, deleted, came back from the recycled log's old records", i)
		}
	}
	for i := 1000; i < 1010; i++ {
		got, err := e.Get(context.Background(), []engine.Key{enginetest.K(uint64(i))})
		if err != nil || !bytes.Equal(got[0], bytes.Repeat([]byte{byte(i)}, 100)) {
			t.Fatalf("key %d after the crash: %v, %v", i, got, err)
		}
	}
}

// TestTornWriteInRecycledLog: the last record of a recycled log damaged,
// as a crash in the middle of its write leaves it: the records before it
// are replayed, it is reported and cut off, the retired generation's
// records after it are not read, and the store goes on from there.
func TestTornWriteInRecycledLog(t *testing.T) {
	dir := t.TempDir()
	o := recycleOptions()
	e := openFor(t, dir, o)
	putN(t, e, 0, 300, 100)
	checkpointAt(t, e, 1)
	checkpointAt(t, e, 2)
	for i := 500; i < 520; i++ {
		putN(t, e, i, i+1, 100) // one record per update
	}
	end := e.log.written()
	path := logPath(dir, e.gen)
	e.abandon()
	flipByte(t, path, end-10) // inside the last record's body

	e = openFor(t, dir, o)
	st := stats(t, e)
	t.Logf("recovery report: %+v", st.Recovery)
	if st.Recovery.DroppedBytes == 0 {
		t.Fatal("a damaged final record was accepted silently")
	}
	got, err := e.Get(context.Background(), firstKeys(520)[500:])
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if (v == nil) != (i == 19) {
			t.Fatalf("key %d: %v; want all but the damaged last one", 500+i, v)
		}
	}
	putN(t, e, 600, 610, 100)
	e.abandon()
	e = openFor(t, dir, o)
	defer e.Close()
	if st := stats(t, e); st.Recovery.DroppedBytes != 0 {
		t.Fatalf("second recovery report %+v: want nothing dropped", st.Recovery)
	}
	got, err = e.Get(context.Background(), firstKeys(610)[600:])
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v == nil {
			t.Fatalf("key %d, written after the first recovery, is missing", 600+i)
		}
	}
}

// TestLegacyLogIsReplayed: a log written before logs were recycled (no
// file header, 8-byte record headers, no end marker) is replayed, the
// store writes on in its format until its next page checkpoint, and then
// in the current one.
func TestLegacyLogIsReplayed(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions()
	e := openFor(t, dir, o)
	e.abandon() // a store with an empty log of generation 0
	legacy := logRecords{format: logFormat{legacy: true}}
	for i := 0; i < 50; i++ {
		k := enginetest.K(uint64(i))
		legacy.shard = byte(e.layout.shard(keyHash(&k)))
		legacy.logPut(&entry{key: k}, bytes.Repeat([]byte{byte(i)}, 40))
	}
	if err := os.WriteFile(logPath(dir, 0), legacy.buf, 0o644); err != nil {
		t.Fatal(err)
	}
	e = openFor(t, dir, o)
	if st := stats(t, e); st.Recovery.ReplayedRecords != 50 || st.Recovery.DroppedBytes != 0 {
		t.Fatalf("recovery report %+v: want the 50 records replayed", st.Recovery)
	}
	putN(t, e, 100, 110, 40) // appended in the legacy format
	e.abandon()
	e = openFor(t, dir, o)
	if st := stats(t, e); st.Recovery.ReplayedRecords != 60 || st.Recovery.DroppedBytes != 0 {
		t.Fatalf("second recovery report %+v: want 60 records replayed", st.Recovery)
	}
	if err := e.Close(); err != nil { // a page checkpoint: the next log is current
		t.Fatal(err)
	}
	e = openFor(t, dir, o)
	defer e.Close()
	if data, err := os.ReadFile(logPath(dir, e.gen)); err != nil || !bytes.HasPrefix(data, []byte(walFileMagic)) {
		t.Fatalf("log after the page checkpoint: %.8q, %v; want the current format", data, err)
	}
	keys := append(firstKeys(50), firstKeys(110)[100:]...)
	got, err := e.Get(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v == nil {
			t.Fatalf("key %v missing after the legacy log's replay", keys[i])
		}
	}
}

// TestUnsyncedLogIsNotKept: a log retired with more than a buffer's worth
// never synced (SyncBlock, a Close with no Checkpoint before it) is
// deleted, not kept as the spare: the kernel would write it out only to
// have it overwritten.
func TestUnsyncedLogIsNotKept(t *testing.T) {
	dir := t.TempDir()
	o := recycleOptions()
	o.Sync = engine.SyncBlock
	e := openFor(t, dir, o)
	putN(t, e, 0, 4000, 400) // 1.7 MB of log, never synced
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, spareLogName)); !os.IsNotExist(err) {
		t.Fatalf("spare log after closing over an unsynced one: %v, want none", err)
	}
	e = openFor(t, dir, o)
	defer e.Close()
	putN(t, e, 4000, 4010, 400)
	checkpointAt(t, e, 1) // synced by the block boundary, then retired
	if _, err := os.Stat(filepath.Join(dir, spareLogName)); err != nil {
		t.Fatalf("a synced log was not kept as the spare: %v", err)
	}
}
