package sozu

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/utxostore/utxostore/engine"
)

// A power loss can keep any of the blocks of a log write that no fsync
// covered yet, in any order (a SIGKILL cannot: the page cache keeps them
// all). These tests leave the disk as such a loss would, by zeroing what
// did not reach it, and check that recovery tells that tear from damage to
// records an fsync had made durable.

// oneShard writes to a store of one shard: each Update call is then one
// write of the log, between its marks.
func oneShard() Options {
	o := tinyOptions()
	o.Shards = 1
	return o
}

// writesThenPowerLoss writes records 0–19 one Update call (one write, then
// an fsync) each, then records 20–39 in one call, and drops the store
// without closing it. It returns the log's path and where each call's
// write starts, the last call's end as the 22nd.
func writesThenPowerLoss(t *testing.T, dir string) (string, []int64) {
	t.Helper()
	e := openFor(t, dir, oneShard())
	var starts []int64
	for i := 0; i < 20; i++ {
		starts = append(starts, e.log.written())
		putN(t, e, i, i+1, 20)
	}
	starts = append(starts, e.log.written())
	putN(t, e, 20, 40, 20)
	starts = append(starts, e.log.written())
	e.abandon()
	return logPath(dir, 0), starts
}

// lose zeroes [from, to) of the file at path: blocks a power loss kept
// from the disk read back as the file's earlier content, zeroes here.
func lose(t *testing.T, path string, from, to int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, to-from), from); err != nil {
		t.Fatal(err)
	}
}

func TestPowerLossTearInTheLastWriteIsTruncated(t *testing.T) {
	// The middle of the last write is lost, and the rest of it reached
	// the disk: its closing mark vouches for the records after the tear.
	// Or its closing mark is lost too: its opening mark, before the tear,
	// vouches for them.
	for _, closingLost := range []bool{false, true} {
		t.Run(map[bool]string{false: "closing mark kept", true: "closing mark lost"}[closingLost], func(t *testing.T) {
			tearInTheLastWrite(t, closingLost)
		})
	}
}

func tearInTheLastWrite(t *testing.T, closingLost bool) {
	dir := t.TempDir()
	path, starts := writesThenPowerLoss(t, dir)
	mid := (starts[20] + starts[21]) / 2
	lose(t, path, mid-40, mid+40)
	if closingLost {
		lose(t, path, starts[21]-markRecordSize, starts[21])
	}

	e := openFor(t, dir, oneShard())
	rep := stats(t, e).Recovery
	t.Logf("recovery report: %+v", rep)
	if rep.DroppedBytes == 0 || !strings.Contains(rep.Detail, "valid records written before it was durable") {
		t.Fatalf("the tear was not reported as one with records after it: %+v", rep)
	}
	if size := fileSize(t, path); size != starts[20] {
		t.Fatalf("the log keeps %d bytes, want %d: up to the torn write", size, starts[20])
	}
	got, err := e.Get(t.Context(), firstKeys(40))
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for kept < len(got) && got[kept] != nil {
		kept++
	}
	for i := kept; i < len(got); i++ {
		if got[i] != nil {
			t.Fatalf("record %d survived after record %d was lost: not a prefix", i, kept)
		}
	}
	// Every earlier call's write was durable; the last, torn, is dropped
	// whole.
	if kept != 20 {
		t.Fatalf("%d records kept, want the 20 durable ones and none of the torn write's", kept)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openFor(t, dir, oneShard())
	defer e.Close()
	if rep := stats(t, e).Recovery; rep.DroppedBytes != 0 {
		t.Fatalf("a second open dropped more: %+v", rep)
	}
	if n := countPresent(t, e, firstKeys(40)); n != kept {
		t.Fatalf("%d records after a second open, %d after the first", n, kept)
	}
}

func TestDamageBeforeADurableWriteIsRefused(t *testing.T) {
	dir := t.TempDir()
	path, starts := writesThenPowerLoss(t, dir)
	// The record of the 11th call: the fsync after it returned, and the
	// writes after it say so.
	flipByte(t, path, (starts[10]+starts[11])/2)

	_, err := Open(dir, oneShard())
	var damaged *DamagedLogError
	var corrupt *engine.CorruptionError
	if !errors.As(err, &damaged) || !errors.As(err, &corrupt) || !strings.Contains(err.Error(), "durable") {
		t.Fatalf("open over a damaged durable record: %v, want a DamagedLogError naming the later durable write", err)
	}
	t.Logf("reported: %v", err)
	o := oneShard()
	o.DiscardCorruptLog = true
	e := openFor(t, dir, o)
	defer e.Close()
	if n := countPresent(t, e, firstKeys(40)); n != 10 {
		t.Fatalf("%d records kept, want the 10 before the damage", n)
	}
}

func TestRecordsNoMarkVouchesForAreRefused(t *testing.T) {
	dir := t.TempDir()
	path, starts := writesThenPowerLoss(t, dir)
	// Both marks of the last write are lost, its records are not: nothing
	// says those records were written before the first bad one was
	// durable.
	lose(t, path, starts[20], starts[20]+markRecordSize)
	lose(t, path, starts[21]-markRecordSize, starts[21])

	_, err := Open(dir, oneShard())
	var corrupt *engine.CorruptionError
	if !errors.As(err, &corrupt) || !strings.Contains(err.Error(), "valid record follows") {
		t.Fatalf("open over records no mark vouches for: %v, want a CorruptionError", err)
	}
	t.Logf("reported: %v", err)
}
