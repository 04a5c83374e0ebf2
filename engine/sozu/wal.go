package sozu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/utxostore/utxostore/engine"
)

// The write-ahead log holds, since the last page checkpoint, the outcome of
// every mutation of every shard (not the UpdateFunc: replay must not re-run
// record logic). One log for all shards, so that an acknowledged batch costs
// one fsync however many shards it touched. A record is
//
//	[0:4] body length  [4:8] CRC32C of the body  [8:] body
//
// and the body is [kind][shard][payload]. Each shard appends its records in
// the order it applied them, so replaying the records of one shard in log
// order rebuilds exactly that shard's state.
const (
	walHeaderSize = 8
	walPut        = 1
	walRemove     = 2
	walMeta       = 3
	walHeight     = 4
	// walMaxBody bounds a record so that a corrupt length cannot make
	// recovery allocate gigabytes.
	walMaxBody = 1 << 30
	// logBufferBytes is how much the log buffers before it writes without
	// being asked to sync: under SyncBlock a call then costs a copy, not a
	// write system call.
	logBufferBytes = 1 << 20
)

// logRecords is a shard's buffer of records not yet in the log file.
type logRecords struct {
	shard byte
	buf   []byte
}

func (w *logRecords) begin(kind byte) int {
	w.buf = append(w.buf, make([]byte, walHeaderSize)...)
	start := len(w.buf)
	w.buf = append(w.buf, kind, w.shard)
	return start
}

func (w *logRecords) end(start int) {
	body := w.buf[start:]
	binary.LittleEndian.PutUint32(w.buf[start-8:], uint32(len(body)))
	binary.LittleEndian.PutUint32(w.buf[start-4:], checksum(body))
}

func (w *logRecords) logPut(e *entry, value []byte) {
	start := w.begin(walPut)
	w.buf = append(w.buf, e.key[:]...)
	flags := byte(0)
	if e.terms.Consumed {
		flags = 1
	}
	w.buf = append(w.buf, flags)
	for _, t := range []uint32{e.terms.ProducedAt, e.terms.UnminedSince, e.terms.DeleteAtHeight, e.terms.PreserveUntil} {
		w.buf = binary.AppendUvarint(w.buf, uint64(t))
	}
	w.buf = binary.AppendUvarint(w.buf, uint64(e.expiresAt))
	w.buf = append(w.buf, value...)
	w.end(start)
}

func (w *logRecords) logRemove(k engine.Key) {
	start := w.begin(walRemove)
	w.buf = append(w.buf, k[:]...)
	w.end(start)
}

func (w *logRecords) logMeta(name string, value []byte) {
	start := w.begin(walMeta)
	w.buf = binary.AppendUvarint(w.buf, uint64(len(name)))
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, value...)
	w.end(start)
}

func (w *logRecords) logHeight(h uint32) {
	start := w.begin(walHeight)
	w.buf = binary.LittleEndian.AppendUint32(w.buf, h)
	w.end(start)
}

// writeAheadLog is the log file, shared by the shards. Appends are
// serialised into one buffer, written to the file when it holds
// logBufferBytes or when a sync needs it; fsyncs are group commits:
// whoever syncs covers every append made before it started, and a caller
// whose records are already covered returns at once. Because the buffer
// keeps the global append order, what reaches the file is always a prefix
// of it: a crash loses a tail, never a record in the middle.
type writeAheadLog struct {
	path string

	mu      sync.Mutex // guards f's writes, size, pending and failed
	f       *os.File
	size    int64  // bytes in the file
	pending []byte // appended records not yet written to the file
	failed  error  // the first write or fsync failure: the log then refuses work

	// busy counts shards applying a group of requests whose records they
	// have not appended yet; idle is signalled when it drops to zero. A
	// group commit waits for them, so that the shards of one batch share
	// one fsync instead of each paying its own.
	busy int
	idle sync.Cond

	syncMu sync.Mutex // one fsync at a time
	synced int64      // the size at the last fsync: what a crash cannot take
	syncs  uint64     // fsyncs so far
	// syncTime is the time the fsyncs took: what SyncAlways costs a
	// caller beyond the work itself.
	syncTime time.Duration
}

func newLog(f *os.File, path string, size int64) *writeAheadLog {
	w := &writeAheadLog{f: f, path: path, size: size, synced: size}
	w.idle.L = &w.mu
	return w
}

func createLog(path string) (*writeAheadLog, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return newLog(f, path, 0), nil
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
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed != nil {
		return 0, w.failed
	}
	w.pending = append(w.pending, r.buf...)
	r.buf = r.buf[:0]
	if len(w.pending) >= logBufferBytes {
		if err := w.writePending(); err != nil {
			return 0, err
		}
	}
	return w.size + int64(len(w.pending)), nil
}

// writePending writes the buffered records to the file; w.mu is held.
func (w *writeAheadLog) writePending() error {
	if len(w.pending) == 0 {
		return nil
	}
	if _, err := w.f.WriteAt(w.pending, w.size); err != nil {
		w.failed = fmt.Errorf("sozu: writing log %s: %w", w.path, err)
		return w.failed
	}
	w.size += int64(len(w.pending))
	w.pending = w.pending[:0]
	return nil
}

// syncTo makes the log durable up to end at least; it costs nothing when
// it already is. Before its fsync it waits for the shards still applying a
// group (they append without blocking), so one fsync covers a whole
// batch. It must not be called from inside a group: that shard would wait
// for itself.
func (w *writeAheadLog) syncTo(end int64) error {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	if w.synced >= end {
		return nil
	}
	w.mu.Lock()
	for w.busy > 0 {
		w.idle.Wait()
	}
	err := w.failed
	if err == nil {
		err = w.writePending()
	}
	target := w.size
	w.mu.Unlock()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := w.f.Sync(); err != nil {
		w.mu.Lock()
		w.failed = fmt.Errorf("sozu: fsync log %s: %w", w.path, err)
		w.mu.Unlock()
		return w.failed
	}
	w.synced = target
	w.syncs++
	w.syncTime += time.Since(start)
	return nil
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
func (w *writeAheadLog) written() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.size + int64(len(w.pending))
}

func (w *writeAheadLog) close() error { return w.f.Close() }

// logTail describes what recovery found after the last good record.
type logTail struct {
	// goodBytes is the length of the valid prefix.
	goodBytes int64
	// droppedBytes is how much followed it; non-zero means a torn tail.
	droppedBytes int64
	// midLog reports a bad record followed by a valid one: not a torn
	// write but corruption inside the log.
	midLog bool
	detail string
}

// readLog calls apply for every valid record of the log at path and
// reports where the valid prefix ends.
func readLog(path string, apply func(body []byte) error) (logTail, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return logTail{}, nil
	}
	if err != nil {
		return logTail{}, err
	}
	off := 0
	for off < len(data) {
		body, ok, why := recordAt(data, off)
		if !ok {
			tail := logTail{goodBytes: int64(off), droppedBytes: int64(len(data) - off), detail: why}
			for next := off + 1; next+walHeaderSize < len(data); next++ {
				if _, ok, _ := recordAt(data, next); ok {
					tail.midLog = true
					tail.detail = fmt.Sprintf("%s at offset %d, yet a valid record follows at offset %d", why, off, next)
					break
				}
			}
			return tail, nil
		}
		if err := apply(body); err != nil {
			return logTail{}, &engine.CorruptionError{Engine: "sozu", Where: fmt.Sprintf("%s offset %d", path, off), Detail: err.Error()}
		}
		off += walHeaderSize + len(body)
	}
	return logTail{goodBytes: int64(off)}, nil
}

func recordAt(data []byte, off int) ([]byte, bool, string) {
	if len(data)-off < walHeaderSize {
		return nil, false, "partial record header"
	}
	n := int(binary.LittleEndian.Uint32(data[off:]))
	if n < 1 || n > walMaxBody {
		return nil, false, fmt.Sprintf("record length %d", n)
	}
	if len(data)-off-walHeaderSize < n {
		return nil, false, "record cut short"
	}
	body := data[off+walHeaderSize : off+walHeaderSize+n]
	if checksum(body) != binary.LittleEndian.Uint32(data[off+4:]) {
		return nil, false, "record checksum mismatch"
	}
	if n < 2 || body[0] < walPut || body[0] > walHeight {
		return nil, false, fmt.Sprintf("record kind %d", body[0])
	}
	return body, true, ""
}

// decodePut parses a put record body (after its kind byte).
func decodePut(body []byte) (entry, []byte, error) {
	var e entry
	if len(body) < engine.KeySize+1 {
		return e, nil, io.ErrUnexpectedEOF
	}
	copy(e.key[:], body)
	e.terms.Consumed = body[engine.KeySize]&1 != 0
	rest := body[engine.KeySize+1:]
	var t [5]uint64
	var err error
	for i := range t {
		if t[i], rest, err = readUvarint(rest); err != nil {
			return e, nil, err
		}
	}
	e.terms.ProducedAt, e.terms.UnminedSince, e.terms.DeleteAtHeight, e.terms.PreserveUntil = uint32(t[0]), uint32(t[1]), uint32(t[2]), uint32(t[3])
	e.expiresAt = int64(t[4])
	return e, rest, nil
}
