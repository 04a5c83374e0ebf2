package sozu

import (
	"os"
	"testing"

	"github.com/utxostore/utxostore/engine"
)

// TestLogFileGrowsInSteps: under SyncAlways a new store's log is extended
// with zeros a step at a time, ahead of its records, so that its fsyncs
// overwrite blocks the file has rather than lengthen it; under SyncBlock
// the file grows as it is written.
func TestLogFileGrowsInSteps(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions()
	e := openFor(t, dir, o)
	defer e.Close()
	step := logGrowStep(o)
	path := logPath(dir, e.gen)
	for i := range 50 {
		putN(t, e, i, i+1, 100) // one write and fsync each
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		written := e.log.written()
		if st.Size()%step != 0 || st.Size() < written {
			t.Fatalf("after %d writes the log file holds %d bytes, the log %d: want a multiple of the %d-byte step, at least the log", i+1, st.Size(), written, step)
		}
	}

	o.Sync = engine.SyncBlock
	o.CheckpointLogBytes = 1 << 30 // a Checkpoint only fsyncs the log
	dir = t.TempDir()
	e = openFor(t, dir, o)
	defer e.Close()
	putN(t, e, 0, 50, 100)
	if err := e.Checkpoint(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(logPath(dir, e.gen)); err != nil || st.Size() != e.log.written() {
		t.Fatalf("under SyncBlock the log file (%v) holds more than the log's %d bytes", err, e.log.written())
	}
}

// TestZerosPastTheLogAreNoTear: the zeros a growing log's file ends with
// were never written; an abandoned store (a killed process) reopens with
// every acknowledged write and reports no torn tail.
func TestZerosPastTheLogAreNoTear(t *testing.T) {
	dir := t.TempDir()
	e := openFor(t, dir, tinyOptions())
	putN(t, e, 0, 40, 30)
	path, end := largestLog(t, dir)
	e.abandon()
	if st, err := os.Stat(path); err != nil || st.Size() <= end {
		t.Fatalf("the log file (%v) ends where its records do, at %d: no zeros to read", err, end)
	}
	e = openFor(t, dir, tinyOptions())
	defer e.Close()
	st, err := e.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Recovery.DroppedBytes != 0 || st.Recovery.ReplayedRecords == 0 {
		t.Fatalf("recovery report %+v: want the records replayed and nothing dropped", st.Recovery)
	}
	expectPutN(t, e, 40, 30)
}

// TestWritesWithoutABlockKeepTheLogBounded: with no block boundary for
// long, a write that finds the log at unboundedLog takes the page
// checkpoint itself, so the log a reopen replays stays within the bound
// (and a batch), and a crash loses nothing of what was written.
func TestWritesWithoutABlockKeepTheLogBounded(t *testing.T) {
	dir := t.TempDir()
	o := Options{Sync: engine.SyncBlock, CheckpointLogBytes: 1 << 20}
	e := openFor(t, dir, o)
	bound := e.unboundedLog()
	const batch, size = 1000, 1000
	n := 0
	for int64(n*size) < bound*3/2 {
		putN(t, e, n, n+batch, size)
		n += batch
		if written := e.log.written(); written >= bound+2*batch*size {
			t.Fatalf("after %d records the log holds %d bytes, past the bound %d and a batch", n, written, bound)
		}
	}
	st, err := e.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.CheckpointBytesWritten == 0 {
		t.Fatal("no page checkpoint was taken")
	}
	e.abandon()
	e = openFor(t, dir, o)
	defer e.Close()
	if st, err = e.Stats(t.Context()); err != nil || st.Recovery.ReplayedBytes >= bound+2*batch*size {
		t.Fatalf("the reopen replayed %d bytes (%v), past the bound %d", st.Recovery.ReplayedBytes, err, bound)
	}
	expectPutN(t, e, n, size)
}
