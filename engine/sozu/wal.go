package sozu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"
	"time"

	"github.com/utxostore/utxostore/engine"
)

// The write-ahead log holds, since the last page checkpoint, the outcome of
// every mutation of every shard (not the UpdateFunc: replay must not re-run
// record logic). One log for all shards, so that an acknowledged batch costs
// one fsync however many shards it touched. A log file starts with
//
//	[0:8] "SOZUWAL2"  [8:16] its generation
//
// and holds records
//
//	[0:4] body length  [4:8] CRC32C of [8:12] and the body  [8:12] generation (low 32 bits)  [12:] body
//
// whose body is [kind][shard][payload]. Each shard appends its records in
// the order it applied them, so replaying the records of one shard in log
// order rebuilds exactly that shard's state. Every write ends with an end
// marker (a record of length 0), which the next write overwrites.
//
// Log files are recycled: the log a page checkpoint retires becomes the
// next generation's (wal.spare in between), so appending overwrites blocks
// the file already has and a sync (fdatasync) need not commit a new size
// and new blocks to the file system's journal, which made every sync cost
// about half again as much. What follows the end marker is the retired
// generation's data, which a reader never reaches; a record of another
// generation never passes as one of this one (its generation is under the
// checksum). A log written before recycling (no file header, 8-byte record
// headers with the CRC of the body, no end marker) is still read, and
// written in that format until the next page checkpoint.
const (
	walFileMagic      = "SOZUWAL2"
	walFileHeaderSize = 16
	walPut            = 1
	walRemove         = 2
	walMeta           = 3
	walHeight         = 4
	// walMaxBody bounds a record so that a corrupt length cannot make
	// recovery allocate gigabytes.
	walMaxBody = 1 << 30
	// logBufferBytes is how much the log buffers before it writes without
	// being asked to sync: under SyncBlock a call then costs a copy, not a
	// write system call.
	logBufferBytes = 1 << 20
)

// logFormat is how a log file frames its records.
type logFormat struct {
	// legacy is the format before recycling.
	legacy bool
	// gen is the low 32 bits of the log's generation (not legacy).
	gen uint32
}

func (f logFormat) headerSize() int {
	if f.legacy {
		return 8
	}
	return 12
}

// seal fills the record header hdr for body: its length, generation and
// checksum.
func (f logFormat) seal(hdr, body []byte) {
	binary.LittleEndian.PutUint32(hdr, uint32(len(body)))
	if !f.legacy {
		binary.LittleEndian.PutUint32(hdr[8:], f.gen)
	}
	binary.LittleEndian.PutUint32(hdr[4:], f.sum(hdr, body))
}

// sum is the checksum of a record whose header hdr has its generation
// filled in.
func (f logFormat) sum(hdr, body []byte) uint32 {
	if f.legacy {
		return checksum(body)
	}
	return crc32.Update(checksum(hdr[8:12]), castagnoli, body)
}

// endMarker is the record of length 0 that ends every write (nil for the
// legacy format, which ends where the file does).
func (f logFormat) endMarker() []byte {
	if f.legacy {
		return nil
	}
	m := make([]byte, f.headerSize())
	f.seal(m, nil)
	return m
}

// fileHeader starts a log file of generation gen.
func fileHeader(gen uint64) []byte {
	return binary.LittleEndian.AppendUint64([]byte(walFileMagic), gen)
}

// logRecords is a shard's buffer of records not yet in the log file,
// framed in the format of the log they go to.
type logRecords struct {
	shard  byte
	format logFormat
	buf    []byte
}

func (w *logRecords) begin(kind byte) int {
	w.buf = append(w.buf, make([]byte, w.format.headerSize())...)
	start := len(w.buf)
	w.buf = append(w.buf, kind, w.shard)
	return start
}

func (w *logRecords) end(start int) {
	w.format.seal(w.buf[start-w.format.headerSize():start], w.buf[start:])
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
	path   string
	format logFormat
	marker []byte // written after every write: format.endMarker()

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

func newLog(f *os.File, path string, size int64, format logFormat) *writeAheadLog {
	w := &writeAheadLog{f: f, path: path, format: format, marker: format.endMarker(), size: size, synced: size}
	w.idle.L = &w.mu
	return w
}

// createLog starts the log of generation gen at path: in the file spare
// names when there is one (a retired log, renamed), else in a new file.
// The caller makes it durable.
func createLog(path string, gen uint64, spare string) (*writeAheadLog, error) {
	flags := os.O_RDWR | os.O_CREATE | os.O_TRUNC
	if spare != "" && os.Rename(spare, path) == nil {
		flags = os.O_RDWR // its blocks are what recycling is for
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, err
	}
	w, err := startLog(f, path, gen)
	if err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// startLog writes the file header of generation gen and an end marker at
// the start of f, so that whatever the file held before is never read.
func startLog(f *os.File, path string, gen uint64) (*writeAheadLog, error) {
	format := logFormat{gen: uint32(gen)}
	head := append(fileHeader(gen), format.endMarker()...)
	if _, err := f.WriteAt(head, 0); err != nil {
		return nil, fmt.Errorf("sozu: starting log %s: %w", path, err)
	}
	return newLog(f, path, walFileHeaderSize, format), nil
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
	n := len(w.pending)
	// The end marker goes in the same write, after the records; the next
	// write starts over it.
	if _, err := w.f.WriteAt(append(w.pending, w.marker...), w.size); err != nil {
		w.failed = fmt.Errorf("sozu: writing log %s: %w", w.path, err)
		return w.failed
	}
	w.size += int64(n)
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
	if err := syncData(w.f); err != nil {
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

// unsynced is how much of the log a crash could still take.
func (w *writeAheadLog) unsynced() int64 {
	written := w.written()
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	return written - w.synced
}

func (w *writeAheadLog) close() error { return w.f.Close() }

// logTail describes what recovery found after the last good record.
type logTail struct {
	// goodBytes is the length of the valid prefix, file header included.
	goodBytes int64
	// droppedBytes is how much followed it; non-zero means a torn tail.
	droppedBytes int64
	// midLog reports a bad record followed by a valid one: not a torn
	// write but corruption inside the log.
	midLog bool
	detail string
	// format is the file's; fresh reports a missing or empty file.
	format logFormat
	fresh  bool
}

// readLog calls apply for every valid record of the log of generation gen
// at path and reports where the valid prefix ends: at an end marker or
// the end of the file (a clean end), or at a bad record (a torn tail, or
// corruption if a valid record follows).
func readLog(path string, gen uint64, apply func(body []byte) error) (logTail, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(data) == 0) {
		return logTail{fresh: true}, nil
	}
	if err != nil {
		return logTail{}, err
	}
	format, off := logFormat{legacy: true}, 0
	if len(data) >= walFileHeaderSize && string(data[:len(walFileMagic)]) == walFileMagic {
		if g := binary.LittleEndian.Uint64(data[len(walFileMagic):]); g != gen {
			return logTail{}, &engine.CorruptionError{Engine: "sozu", Where: path, Detail: fmt.Sprintf("the log of generation %d says it is of generation %d", gen, g)}
		}
		format, off = logFormat{gen: uint32(gen)}, walFileHeaderSize
	}
	for off < len(data) {
		body, state, why := format.recordAt(data, off)
		if state == recordEnd {
			break
		}
		if state == recordBad {
			tail := logTail{goodBytes: int64(off), droppedBytes: int64(len(data) - off), detail: why, format: format}
			for next := off + 1; next+format.headerSize() < len(data); next++ {
				if _, state, _ := format.recordAt(data, next); state == recordValid {
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
		off += format.headerSize() + len(body)
	}
	return logTail{goodBytes: int64(off), format: format}, nil
}

// What recordAt finds at an offset.
const (
	recordValid = iota
	recordEnd   // an end marker of this log's generation
	recordBad
)

func (f logFormat) recordAt(data []byte, off int) ([]byte, int, string) {
	h := f.headerSize()
	if len(data)-off < h {
		return nil, recordBad, "partial record header"
	}
	hdr := data[off : off+h]
	n := int(binary.LittleEndian.Uint32(hdr))
	if !f.legacy && binary.LittleEndian.Uint32(hdr[8:]) != f.gen {
		// Checked first: it rejects most offsets at once when recovery
		// looks for a valid record after a bad one.
		return nil, recordBad, "record of another generation"
	}
	if n > walMaxBody || (n < 1 && f.legacy) {
		return nil, recordBad, fmt.Sprintf("record length %d", n)
	}
	if len(data)-off-h < n {
		return nil, recordBad, "record cut short"
	}
	body := data[off+h : off+h+n]
	if f.sum(hdr, body) != binary.LittleEndian.Uint32(hdr[4:]) {
		return nil, recordBad, "record checksum mismatch"
	}
	if n == 0 {
		return nil, recordEnd, ""
	}
	if n < 2 || body[0] < walPut || body[0] > walHeight {
		return nil, recordBad, fmt.Sprintf("record kind %d", body[0])
	}
	return body, recordValid, ""
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
