package sozu

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/utxostore/utxostore/engine"
)

// countPresent is how many of keys the store holds.
func countPresent(t *testing.T, e *Engine, keys []engine.Key) int {
	t.Helper()
	got, err := e.Get(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range got {
		if v != nil {
			n++
		}
	}
	return n
}

// openHolding opens the store in dir and checks that it holds the n
// records putN(0, n) wrote.
func openHolding(t *testing.T, dir string, o Options, n int) *Engine {
	t.Helper()
	e := openFor(t, dir, o)
	if got := countPresent(t, e, firstKeys(n)); got != n {
		e.Close()
		t.Fatalf("%d of %d records", got, n)
	}
	return e
}

// closedStore writes 50 records in dir and closes the store cleanly.
func closedStore(t *testing.T, dir string) {
	t.Helper()
	e := openFor(t, dir, tinyOptions())
	putN(t, e, 0, 50, 20)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

func pageCheckpoint(t *testing.T, e *Engine) {
	t.Helper()
	if err := e.Checkpoint(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// recycledStore returns a store whose current log (generation 1) is
// written over the file of generation 0, which holds 300 records of 200
// bytes: more than the test writes after them, so the earlier
// generation's records follow this one's.
func recycledStore(t *testing.T, dir string) *Engine {
	t.Helper()
	e := openFor(t, dir, recycledOptions())
	putN(t, e, 0, 300, 200)
	before, err := os.Stat(logPath(dir, 0))
	if err != nil {
		t.Fatal(err)
	}
	pageCheckpoint(t, e)
	after, err := os.Stat(logPath(dir, 1))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Fatal("the page checkpoint started its log in a new file, not over the previous one")
	}
	if _, err := os.Stat(logPath(dir, 0)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the previous generation's log is still there (%v)", err)
	}
	return e
}

// recycledOptions takes a page checkpoint at a Checkpoint once the log
// holds 64 KiB, and keeps that much of a log's file for the next.
func recycledOptions() Options {
	o := tinyOptions()
	o.CheckpointLogBytes = 64 << 10
	return o
}

// A page checkpoint writes its log over the file the previous one made
// obsolete; what lies past this generation's records is the earlier
// generation's, which ends the log without being a tear, after a crash
// as after a clean close.
func TestRecycledLogEndsAtThisGenerationsRecords(t *testing.T) {
	dir := t.TempDir()
	e := recycledStore(t, dir)
	if size, keep := fileSize(t, logPath(dir, 1)), int64(recycledOptions().CheckpointLogBytes); size != keep {
		t.Fatalf("the recycled log file holds %d bytes, want it cut to the %d of a page checkpoint's log", size, keep)
	}
	putN(t, e, 300, 320, 20)
	written := e.log.written()
	e.abandon()
	path := logPath(dir, 1)
	if size := fileSize(t, path); size <= written {
		t.Fatalf("the recycled log file holds %d bytes, this generation %d: nothing of the earlier one is left to tell apart", size, written)
	}

	e = openFor(t, dir, recycledOptions())
	st := stats(t, e)
	if st.Recovery.DroppedBytes != 0 || st.Recovery.ReplayedRecords < 20 {
		t.Fatalf("recovery over a recycled log: %+v, want 20 records or more replayed and nothing dropped", st.Recovery)
	}
	if n := countPresent(t, e, firstKeys(320)); n != 320 {
		t.Fatalf("%d of 320 records after the crash", n)
	}
	// This generation wrote records before the crash, so the file is cut
	// after them (resumeLog says why).
	if size := fileSize(t, path); size != written {
		t.Fatalf("after recovering records the log file holds %d bytes, want the %d of its records", size, written)
	}
	putN(t, e, 320, 340, 20)
	// A clean close takes a page checkpoint, whose log goes over the file
	// holding the records just written, with no record of its own:
	// reopening keeps the file whole for the next writes.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openFor(t, dir, recycledOptions())
	defer e.Close()
	st = stats(t, e)
	if st.Recovery.DroppedBytes != 0 || st.Recovery.ReplayedRecords != 0 {
		t.Fatalf("reopening after a clean close: %+v", st.Recovery)
	}
	if size := fileSize(t, logPath(dir, e.gen)); size <= e.log.written() {
		t.Fatalf("the log after a clean close holds %d bytes of %d: it was not written over the spare, or was cut", size, e.log.written())
	}
	if n := countPresent(t, e, firstKeys(340)); n != 340 {
		t.Fatalf("%d of 340 records after a clean close", n)
	}
}

// A record of this generation torn over the earlier generation's is a tear
// (reported, dropped), not the end of the log and not damage in its
// middle: the earlier generation's records after it are not this one's.
func TestTornRecordInARecycledLogIsReported(t *testing.T) {
	dir := t.TempDir()
	e := recycledStore(t, dir)
	for i := 300; i < 320; i++ {
		putN(t, e, i, i+1, 20) // one record per update
	}
	written := e.log.written()
	e.abandon()
	// In the last record, before the closing mark of its write.
	flipByte(t, logPath(dir, 1), written-markRecordSize-3)

	e = openFor(t, dir, recycledOptions())
	defer e.Close()
	st := stats(t, e)
	t.Logf("recovery report: %+v", st.Recovery)
	if st.Recovery.DroppedBytes == 0 {
		t.Fatal("a torn record of this generation was taken for the end of the log")
	}
	if n := countPresent(t, e, firstKeys(320)); n != 319 {
		t.Fatalf("%d of 320 records, want all but the torn one", n)
	}
}

// A log file without a header (what a crash leaves when it cuts the log's
// creation short) holds nothing: it opens and is started anew.
func TestLogWithoutAHeaderIsStartedAnew(t *testing.T) {
	dir := t.TempDir()
	closedStore(t, dir)
	path := logPath(dir, 1)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	e := openHolding(t, dir, tinyOptions(), 50)
	defer e.Close()
	putN(t, e, 50, 60, 20)
	head, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(head), logMagic) {
		t.Fatal("a log without a header was appended to as it was")
	}
}

// crashedWithFiftyRecords is a store that crashed (abandon) with 50
// records of 20 bytes in its log: its directory, its log's path and bytes.
func crashedWithFiftyRecords(t *testing.T) (dir, path string, log []byte) {
	t.Helper()
	dir = t.TempDir()
	e := openFor(t, dir, tinyOptions())
	putN(t, e, 0, 50, 20)
	e.abandon()
	path = logPath(dir, 0)
	log, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return dir, path, log
}

// A log whose header names another generation than the checkpoint is
// refused, untouched.
func TestLogOfAnotherGenerationIsRefused(t *testing.T) {
	dir, path, before := crashedWithFiftyRecords(t)
	flipByte(t, path, 8) // the generation's low byte
	_, err := Open(dir, tinyOptions())
	var corrupt *engine.CorruptionError
	if !errors.As(err, &corrupt) || !strings.Contains(err.Error(), "generation") {
		t.Fatalf("open over a log of another generation: %v, want a CorruptionError naming the generations", err)
	}
	t.Logf("reported: %v", err)
	flipByte(t, path, 8)
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Fatal("the refused open changed the log")
	}
	openHolding(t, dir, tinyOptions(), 50).Close()
}

// A log of another format is refused with a FormatError that names the
// format found and says what to do, not reported as damage, and left as it
// was: the format just before this one (before patch records) as any
// earlier one.
func TestLogOfAnotherFormatIsRefused(t *testing.T) {
	dir, path, original := crashedWithFiftyRecords(t)
	last := len(logMagic) - 1
	previous := logMagic[:last] + string(logMagic[last]-1)
	for _, magic := range []string{"SOZUWAL1", previous} {
		earlier := slices.Clone(original)
		copy(earlier, magic)
		if err := os.WriteFile(path, earlier, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir, tinyOptions())
		var format *FormatError
		var corrupt *engine.CorruptionError
		if !errors.As(err, &format) || errors.As(err, &corrupt) || !strings.Contains(err.Error(), "earlier release") || !strings.Contains(err.Error(), magic) {
			t.Fatalf("open over a log of format %s: %v, want a FormatError naming it and an earlier release", magic, err)
		}
		t.Logf("refused: %v", err)
		if after, _ := os.ReadFile(path); !bytes.Equal(after, earlier) {
			t.Fatal("the refused open changed the log")
		}
	}
	if err := os.WriteFile(path, original, 0o644); err != nil {
		t.Fatal(err)
	}
	openHolding(t, dir, tinyOptions(), 50).Close()
}

// A page checkpoint names the new generation in the manifest before it
// starts that generation's log (over the old one's file): a crash between
// the two leaves no log for the current generation, which then reads as
// empty, as it is (no write runs during a page checkpoint).
func TestCrashBeforeTheNewLogStartsLosesNothing(t *testing.T) {
	dir := t.TempDir()
	closedStore(t, dir)
	if err := os.Remove(logPath(dir, 1)); err != nil {
		t.Fatal(err)
	}
	e := openHolding(t, dir, tinyOptions(), 50)
	defer e.Close()
	putN(t, e, 50, 60, 20)
	if n := countPresent(t, e, firstKeys(60)); n != 60 {
		t.Fatalf("%d of 60 records", n)
	}
}
