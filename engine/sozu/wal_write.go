package sozu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/internal/fsutil"
)

// logBufferBytes is how much the log buffers before it writes without
// being asked to sync: under SyncBlock a call then costs a copy, not a
// write system call.
const logBufferBytes = 1 << 20

// writeAheadLog is the log file, shared by the shards. Appends are
// serialised into one buffer, written to the file when it holds
// logBufferBytes or when a sync needs it; fsyncs are group commits:
// whoever syncs covers every append made before it started, and a caller
// whose records are already covered returns at once. Because the buffer
// keeps the global append order, what reaches the file is always a prefix
// of it: a crash loses a tail, never a record in the middle.
//
// A page checkpoint makes the log obsolete and starts the next one in the
// same file (recycle): the log then overwrites blocks the file already has
// instead of growing, so an fsync writes the records and nothing else,
// where growing a file also commits the file system's journal (which then
// waits for the page files' pending writes). Until then, under
// SyncAlways, the file is extended with zeros ahead of the records, a step
// at a time (extend), for the same reason. What lies past the last record
// is an earlier generation's, told apart by the generation every record
// carries, or zeros, which were never written.
type writeAheadLog struct {
	path string
	gen  uint64

	mu      sync.Mutex // guards f's writes, size, allocated, pending and failed
	f       *os.File
	size    int64  // bytes of the log: its header and records (the file may hold more, an earlier generation's)
	pending []byte // appended records not yet written to the file
	failed  error  // the first write or fsync failure: the log then refuses work
	// allocated is the file's length: the log writes over blocks the file
	// has up to it. grow, when not zero, is the step in which a write past
	// it first extends the file with zeros (see extend).
	allocated, grow int64

	// busy counts shards applying a group of requests whose records they
	// have not appended yet; idle is signalled when it drops to zero. A
	// group commit waits for them, so that the shards of one batch share
	// one fsync instead of each paying its own.
	busy int
	idle sync.Cond

	// syncMu guards syncing, waiting, shared, yields, syncs and syncTime;
	// syncDone, on it, is signalled when an fsync ends.
	syncMu   sync.Mutex
	syncing  bool // an fsync is running (syncOnce): one at a time
	syncDone sync.Cond
	// waiting counts the callers waiting for the running fsync to end.
	// shared holds a bit for each of the last eight fsyncs, set when any
	// caller waited for it: other callers commit beside this one's (see
	// syncTo). A lone caller's commit meets another sync only when the
	// engine syncs for itself (a page checkpoint), which is rare.
	waiting int
	shared  uint8
	yields  uint64 // fsyncs whose caller yielded first
	// synced is the size at the last fsync: what a crash cannot take.
	// Written under syncMu; atomic because a write's marks read it under
	// mu, which the fsync must not wait for.
	synced atomic.Int64
	// length is the log's length, size and the pending records (written):
	// stored under mu, read without it, so that a write deciding whether
	// to take a page checkpoint first does not wait for the log.
	length atomic.Int64
	syncs  uint64 // fsyncs so far
	// syncTime is the time the fsyncs took: what SyncAlways costs a
	// caller beyond the work itself.
	syncTime time.Duration
}

func newLog(f *os.File, path string, gen uint64, size int64) *writeAheadLog {
	w := &writeAheadLog{f: f, path: path, gen: gen, size: size, allocated: size}
	w.synced.Store(size)
	w.length.Store(size)
	w.idle.L = &w.mu
	w.syncDone.L = &w.syncMu
	return w
}

// createLog starts the log of generation gen in a new file at path, with
// its header, durable (the file and its directory entry).
func createLog(path string, gen uint64) (*writeAheadLog, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	w := newLog(f, path, gen, logFileHeaderSize)
	err = w.writeHeader()
	if err == nil {
		err = syncData(f)
	}
	if err == nil {
		err = fsutil.SyncDir(filepath.Dir(path))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

func (w *writeAheadLog) writeHeader() error {
	header := binary.LittleEndian.AppendUint64([]byte(logMagic), w.gen)
	if _, err := w.f.WriteAt(header, 0); err != nil {
		return fmt.Errorf("sozu: writing log %s: %w", w.path, withoutPath(err))
	}
	return nil
}

// recycle turns w, a log a page checkpoint has made obsolete, into the
// empty log of generation gen at path, in the same file: the header
// names gen, and the records past it, of w's generation, end the new
// log until it overwrites them. The file is first cut to at most keep
// bytes (a log that grew far past a page checkpoint's size, as an import
// that never reached a block boundary makes, would otherwise keep its
// disk). The header is durable before the rename, so a file named for a
// generation never carries another's header.
func (w *writeAheadLog) recycle(path string, gen uint64, keep int64) (*writeAheadLog, error) {
	if w.failed != nil {
		return nil, errors.New("not recyclable")
	}
	st, err := w.f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > keep {
		if err := w.f.Truncate(keep); err != nil {
			return nil, err
		}
	}
	next := newLog(w.f, path, gen, logFileHeaderSize)
	next.allocated, next.grow = max(min(st.Size(), keep), logFileHeaderSize), w.grow
	if err := next.writeHeader(); err != nil {
		return nil, err
	}
	if err := syncData(w.f); err != nil {
		return nil, err
	}
	if err := os.Rename(w.path, path); err != nil {
		return nil, err
	}
	if err := fsutil.SyncDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	return next, nil
}

// withoutPath drops the file name an *fs.PathError adds to err: the log's
// own path names the file, and a recycled log's file still carries the
// name of the generation it was opened as.
func withoutPath(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

// startGroup and endGroup bracket a shard's group of requests, from before
// it applies the first to after it appended their records.
func (w *writeAheadLog) startGroup() {
	w.mu.Lock()
	w.busy++
	w.mu.Unlock()
}

func (w *writeAheadLog) endGroup() {
	w.mu.Lock()
	if w.busy--; w.busy == 0 {
		w.idle.Broadcast()
	}
	w.mu.Unlock()
}

// append moves a shard's records into the log (no fsync) and empties the
// shard's buffer; it returns the log's length after them, the point a
// later syncTo must reach for them to be durable.
func (w *writeAheadLog) append(r *logRecords) (int64, error) {
	// The buffer is the shard's and w.gen never changes: the checksums
	// are computed before the lock, by each shard in parallel.
	stamp(r.buf, w.gen)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed != nil {
		return 0, w.failed
	}
	if len(w.pending) == 0 && len(r.buf) > 0 {
		// Room for the opening mark, which writePending fills in.
		w.pending = append(w.pending, make([]byte, markRecordSize)...)
	}
	w.pending = append(w.pending, r.buf...)
	r.buf = r.buf[:0]
	end := w.size + int64(len(w.pending))
	w.length.Store(end)
	if len(w.pending) >= logBufferBytes {
		if err := w.writePending(); err != nil {
			return 0, err
		}
	}
	return end, nil
}

// writePending writes the buffered records to the file, between their
// marks; w.mu is held.
func (w *writeAheadLog) writePending() error {
	if len(w.pending) == 0 {
		return nil
	}
	end := w.size + int64(len(w.pending)) + markRecordSize
	durable := w.synced.Load()
	fillMark(w.pending[:markRecordSize], durable, end)
	w.pending = append(w.pending, make([]byte, markRecordSize)...)
	fillMark(w.pending[len(w.pending)-markRecordSize:], durable, end)
	stamp(w.pending[:markRecordSize], w.gen)
	stamp(w.pending[len(w.pending)-markRecordSize:], w.gen)
	err := w.extend(end)
	if err == nil {
		_, err = w.f.WriteAt(w.pending, w.size)
	}
	if err != nil {
		w.failed = fmt.Errorf("sozu: writing log %s: %w", w.path, withoutPath(err))
		return w.failed
	}
	w.size += int64(len(w.pending))
	w.pending = w.pending[:0]
	w.length.Store(w.size)
	return nil
}

// extend makes the file at least end bytes long, when the log grows (grow
// is set) and a write would pass its end: it writes zeros up to the next
// multiple of grow. An fsync after a write that lengthens a file also
// commits the file system's journal (the file's new size); one that
// covers only overwritten blocks writes those blocks and nothing else. So
// a log that grows a step at a time pays the journal once a step rather
// than at every fsync, as a recycled log never does. Recovery reads the
// zeros past the last record as never written (logWindow.tailAt).
func (w *writeAheadLog) extend(end int64) error {
	if w.grow == 0 || end <= w.allocated {
		return nil
	}
	target := (end + w.grow - 1) / w.grow * w.grow
	// Never over the log's own bytes (a recycled file cut shorter than
	// its new header).
	for at := max(w.allocated, w.size); at < target; {
		n := min(target-at, int64(len(zeroBlock)))
		if _, err := w.f.WriteAt(zeroBlock[:n], at); err != nil {
			return err
		}
		at += n
	}
	w.allocated = target
	return nil
}

// zeroBlock is what extend writes with.
var zeroBlock [1 << 20]byte

// logGrowStep is the step in which a log file grows under o: a
// thirty-second of the log a page checkpoint lets accumulate, between
// 64 KiB and 8 MiB, under SyncAlways, whose fsyncs come many to a step.
// Under SyncBlock, at one fsync a block, the zeros would cost more writes
// than the journal commits they save: 0, the file grows as it is written.
func logGrowStep(o Options) int64 {
	if o.Sync != engine.SyncAlways {
		return 0
	}
	return min(max(int64(o.CheckpointLogBytes)/32, 64<<10), 8<<20)
}

// syncTo makes the log durable up to end at least; it costs nothing when
// it already is. One caller at a time runs an fsync (syncOnce); callers
// that arrive during it wait for it to end, all woken at once, and return
// if it covered them, or one of them runs the next fsync for the rest
// (group commit). A caller that finds the log idle while other callers
// commit beside it yields to the goroutines ready to run before it syncs,
// so that callers on their way share its fsync. It must not be called
// from inside a group: syncOnce waits for the shards' groups, that
// shard's too.
func (w *writeAheadLog) syncTo(end int64) error {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	waited := false
	for w.synced.Load() < end {
		if w.syncing {
			w.waiting++
			w.syncDone.Wait()
			w.waiting--
			waited = true
			continue
		}
		w.syncing = true
		yield := !waited && w.shared != 0
		if yield {
			w.yields++
		}
		w.syncMu.Unlock()
		if yield {
			// This fsync's caller found the log idle while others
			// commit too: most often the first back of the callers the
			// last fsync woke, the others still on their way to append.
			// Letting the goroutines that are ready to run go first
			// lets them append in time to share this fsync instead of
			// queueing for the next one (under 64 callers, 30% fewer
			// fsyncs: BENCHMARKS.md, "Durability's cost"). A caller that
			// waited starts at once: the records it waited with are
			// already appended. So does a lone caller: no one is on
			// the way, and the goroutines ready to run may be anyone's
			// work, which would hold its commit for their time slices.
			runtime.Gosched()
		}
		target, took, err := w.syncOnce()
		w.syncMu.Lock()
		w.syncing = false
		w.shared <<= 1
		if w.waiting > 0 {
			w.shared |= 1
		}
		if err == nil {
			w.synced.Store(target)
			w.syncs++
			w.syncTime += took
		}
		w.syncDone.Broadcast()
		if err != nil {
			return err
		}
	}
	return nil
}

// syncOnce writes the pending records and fsyncs the log; it returns the
// size the fsync made durable and the time it took. Before the fsync it
// waits for the shards still applying a group (they append without
// blocking), so one fsync covers a whole batch.
func (w *writeAheadLog) syncOnce() (target int64, took time.Duration, err error) {
	w.mu.Lock()
	for w.busy > 0 {
		w.idle.Wait()
	}
	err = w.failed
	if err == nil {
		err = w.writePending()
	}
	target = w.size
	w.mu.Unlock()
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	if err := syncData(w.f); err != nil {
		w.mu.Lock()
		w.failed = fmt.Errorf("sozu: fsync log %s: %w", w.path, err)
		w.mu.Unlock()
		return 0, 0, w.failed
	}
	return target, time.Since(start), nil
}

// sync makes everything written so far durable.
func (w *writeAheadLog) sync() error { return w.syncTo(w.written()) }

// syncCount is the number of fsyncs of the log so far, and the time they
// took.
func (w *writeAheadLog) syncCount() (uint64, time.Duration) {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	return w.syncs, w.syncTime
}

// written is the log's length: everything appended so far, in the file
// or buffered.
func (w *writeAheadLog) written() int64 { return w.length.Load() }

func (w *writeAheadLog) close() error {
	if w.f == nil { // a log that failed to start
		return nil
	}
	return w.f.Close()
}
