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
