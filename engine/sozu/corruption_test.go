package sozu

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
)

func putN(t *testing.T, e *Engine, from, to int, size int) {
	t.Helper()
	var batch []engine.Update
	for i := from; i < to; i++ {
		v := bytes.Repeat([]byte{byte(i)}, size)
		batch = append(batch, engine.Update{Key: enginetest.K(uint64(i)), Fn: func([]byte) (engine.Mutation, error) {
			return engine.Mutation{Action: engine.Put, Value: v, Terms: engine.Terms{ProducedAt: uint32(i)}}, nil
		}})
	}
	errs, err := e.Update(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// firstKeys is the keys putN(0, n) writes.
func firstKeys(n int) []engine.Key {
	keys := make([]engine.Key, n)
	for i := range keys {
		keys[i] = enginetest.K(uint64(i))
	}
	return keys
}

// largestLog returns the log file that holds the most records and where
// they end (a growing log's file runs on in zeros past them).
func largestLog(t *testing.T, dir string) (string, int64) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(dir, "wal.*"))
	var best string
	var end int64
	for _, l := range logs {
		if e := logEnd(t, l); e > end {
			best, end = l, e
		}
	}
	if end <= logFileHeaderSize {
		t.Fatal("no log holds anything")
	}
	return best, end
}

func TestTornLogTailIsTruncatedAndReported(t *testing.T) {
	dir := t.TempDir()
	e := openFor(t, dir, tinyOptions())
	for i := 0; i < 40; i++ {
		putN(t, e, i, i+1, 20) // one record per update
	}
	e.abandon()
	path, size := largestLog(t, dir)
	// The last write's closing mark ends the log; the cut falls in the
	// last record before it.
	cut := size - markRecordSize - 7
	if err := os.Truncate(path, cut); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	o := tinyOptions()
	o.Logger = slog.New(slog.NewJSONHandler(&logged, nil))
	e, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	st, err := e.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("recovery report: %+v", st.Recovery)
	if st.Recovery.DroppedBytes == 0 {
		t.Fatal("a torn final record was accepted silently")
	}
	if after, _ := os.Stat(path); after.Size() >= cut {
		t.Fatalf("torn tail not truncated: %d bytes", after.Size())
	}
	// The report also reaches the logger, as one structured record.
	var rec struct{ Level, Engine, Log, Detail string }
	if err := json.Unmarshal(logged.Bytes(), &rec); err != nil {
		t.Fatalf("the logger got %q, not one JSON record: %v", logged.String(), err)
	}
	if rec.Level != "WARN" || rec.Engine != "sozu" || rec.Log != path || rec.Detail != st.Recovery.Detail {
		t.Fatalf("logged %+v, want a WARN of engine sozu for %s: %s", rec, path, st.Recovery.Detail)
	}
	keys := firstKeys(40)
	got, err := e.Get(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	missing := 0
	for _, v := range got {
		if v == nil {
			missing++
		}
	}
	if missing != 1 {
		t.Fatalf("%d records lost, want exactly the torn one", missing)
	}
}

// A SIGKILL in the middle of a log write leaves a prefix of it, cut at a
// page boundary: inside a record, or between two. Recovery drops the
// whole write, so it never keeps part of a shard's group of requests:
// here the first of two updates of one key in one batch, which no caller
// could ever have read.
func TestTornWriteIsDroppedWhole(t *testing.T) {
	for _, where := range []string{"inside a record", "between records"} {
		t.Run(where, func(t *testing.T) {
			dir := t.TempDir()
			e := openFor(t, dir, oneShard())
			putN(t, e, 0, 10, 20) // durable: the call returned after its fsync
			before, err := e.Get(t.Context(), firstKeys(1))
			if err != nil {
				t.Fatal(err)
			}
			start := e.log.written()
			key := firstKeys(1)[0]
			batch := []engine.Update{{Key: key, Fn: putValue([]byte("first of the batch"))}}
			for i := 10; i < 20; i++ {
				batch = append(batch, engine.Update{Key: enginetest.K(uint64(i)), Fn: putValue([]byte("other key"))})
			}
			batch = append(batch, engine.Update{Key: key, Fn: putValue([]byte("last of the batch"))})
			if _, err := e.Update(t.Context(), batch); err != nil {
				t.Fatal(err)
			}
			e.abandon()

			// The write's records: its opening mark, the batch's twelve
			// records, its closing mark. Cut it before the last update of
			// the key, or a few bytes into it.
			path := logPath(dir, 0)
			offsets := recordOffsets(t, path, start)
			if len(offsets) != 14 {
				t.Fatalf("the batch's write holds %d records, want 14", len(offsets))
			}
			cut := offsets[12]
			if where == "inside a record" {
				cut += 5
			}
			if err := os.Truncate(path, cut); err != nil {
				t.Fatal(err)
			}

			e = openFor(t, dir, oneShard())
			defer e.Close()
			rep := stats(t, e).Recovery
			t.Logf("recovery report: %+v", rep)
			if rep.DroppedBytes != cut-start || !strings.Contains(rep.Detail, "does not read whole") {
				t.Fatalf("dropped %d bytes, want the torn write's %d, reported as such", rep.DroppedBytes, cut-start)
			}
			if size := fileSize(t, path); size != start {
				t.Fatalf("the log keeps %d bytes, want %d: up to the torn write", size, start)
			}
			got, err := e.Get(t.Context(), firstKeys(20))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[0], before[0]) {
				t.Fatalf("the key updated twice by the torn batch holds %q, want its value from before the batch", got[0])
			}
			if n := countPresent(t, e, firstKeys(20)); n != 10 {
				t.Fatalf("%d of the 20 keys present, want the 10 written before the torn batch", n)
			}
		})
	}
}

// After a crash of the process, the log's last writes may be in the page
// cache only. Open fsyncs the log it replayed before building on it, so a
// Checkpoint right after it (whose log has not grown) does not report
// durable what a power loss could still take; a log that a clean close
// left empty needs no fsync.
func TestReplayedLogIsMadeDurableOnOpen(t *testing.T) {
	dir := t.TempDir()
	e := openFor(t, dir, tinyOptions())
	putN(t, e, 0, 10, 20)
	e.abandon()

	e = openFor(t, dir, tinyOptions())
	if st := stats(t, e); st.Recovery.ReplayedRecords != 10 || st.LogSyncs != 1 {
		t.Fatalf("open replayed %d records with %d fsyncs of the log, want 10 and 1", st.Recovery.ReplayedRecords, st.LogSyncs)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openFor(t, dir, tinyOptions())
	defer e.Close()
	if st := stats(t, e); st.LogSyncs != 0 {
		t.Fatalf("open after a clean close fsynced the empty log %d times", st.LogSyncs)
	}
}

func putValue(v []byte) engine.UpdateFunc {
	return func([]byte) (engine.Mutation, error) { return engine.Mutation{Action: engine.Put, Value: v}, nil }
}

// recordOffsets lists where the records of the log at path start, from
// offset from on to the zeros a growing log's file ends with, if any.
func recordOffsets(t *testing.T, path string, from int64) []int64 {
	t.Helper()
	offsets, _ := walkLog(t, path, from)
	return offsets
}

// logEnd is where the records of the log at path end.
func logEnd(t *testing.T, path string) int64 {
	t.Helper()
	_, end := walkLog(t, path, logFileHeaderSize)
	return end
}

// walkLog reads the records of the log at path from offset from on, and
// returns where each starts and where the last ends.
func walkLog(t *testing.T, path string, from int64) (offsets []int64, end int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	w := &logWindow{f: f, size: st.Size()}
	head, err := w.at(0, logFileHeaderSize)
	if err != nil || len(head) < logFileHeaderSize {
		return nil, 0
	}
	gen := binary.LittleEndian.Uint64(head[8:])
	off := from
	for off < w.size {
		r, err := w.record(off, gen)
		if err == nil && r.why != "" {
			if zeros, zerr := w.zeroFrom(off); zerr == nil && zeros {
				break
			}
		}
		if err != nil || r.why != "" {
			t.Fatalf("record at %d: %v %s", off, err, r.why)
		}
		if r.gen != uint32(gen) {
			break // an earlier generation's, in a recycled file
		}
		offsets = append(offsets, off)
		off += int64(r.length)
	}
	return offsets, off
}

func TestCorruptLogMiddleIsRefused(t *testing.T) {
	dir := t.TempDir()
	e := openFor(t, dir, tinyOptions())
	for i := 0; i < 60; i++ {
		putN(t, e, i, i+1, 20)
	}
	e.abandon()
	path, size := largestLog(t, dir)
	flipByte(t, path, size/2)
	_, err := Open(dir, tinyOptions())
	var corrupt *engine.CorruptionError
	if !errors.As(err, &corrupt) {
		t.Fatalf("open over a log damaged in its middle: %v, want a CorruptionError", err)
	}
	t.Logf("reported: %v", err)
	o := tinyOptions()
	o.DiscardCorruptLog = true
	e = openFor(t, dir, o)
	e.Close()
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func TestFlippedPageByteIsDetected(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions()
	o.Shards = 1
	e := openFor(t, dir, o)
	// Enough records for several pages: sparse buckets share pages and
	// changes wait in memory, so a few hundred fit in three.
	const n = 2000
	putN(t, e, 0, n, 20)
	if err := e.Checkpoint(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	path := pagesPath(dir, 0)
	st, _ := os.Stat(path)
	if st.Size() < 4*PageSize {
		t.Fatalf("page file holds only %d bytes", st.Size())
	}
	// Damage one byte inside the payload of every page, as rot would.
	for p := int64(0); p < st.Size()/PageSize; p++ {
		flipByte(t, path, p*PageSize+pageHeaderSize+33)
	}
	keys := firstKeys(n)
	_, err := e.Get(context.Background(), keys)
	var corrupt *engine.CorruptionError
	if !errors.As(err, &corrupt) {
		t.Fatalf("read over damaged pages: %v, want a CorruptionError", err)
	}
	t.Logf("reported: %v", err)
	// Keys still in layer 0 read fine; none comes back damaged.
	for i := range keys {
		v, err := e.Get(context.Background(), keys[i:i+1])
		if err == nil && v[0] != nil && !bytes.Equal(v[0], bytes.Repeat([]byte{byte(i)}, 20)) {
			t.Fatalf("key %d returned damaged data", i)
		}
	}
	e.abandon()
	if _, err := Open(dir, o); !errors.As(err, &corrupt) {
		t.Fatalf("open over damaged pages: %v, want a CorruptionError", err)
	}
}

// TestFlippedValueLogByteIsDetected damages a value in its file. The
// store is reopened first: an open store keeps its recent values in memory
// (valueLog) and reads them from there.
func TestFlippedValueLogByteIsDetected(t *testing.T) {
	dir := t.TempDir()
	e := openFor(t, dir, tinyOptions())
	big := bytes.Repeat([]byte("v"), 1000)
	k := enginetest.K(1)
	if _, err := e.Update(context.Background(), []engine.Update{{Key: k, Fn: func([]byte) (engine.Mutation, error) {
		return engine.Mutation{Action: engine.Put, Value: big}, nil
	}}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	flipByte(t, valueLogPath(dir, e.layout.shard(keyHash(&k)), 0), vlogHeaderSize+500)
	e = openFor(t, dir, tinyOptions())
	defer e.Close()
	_, err := e.Get(context.Background(), []engine.Key{k})
	var corrupt *engine.CorruptionError
	if !errors.As(err, &corrupt) {
		t.Fatalf("read of a damaged out-of-line value: %v", err)
	}
}
