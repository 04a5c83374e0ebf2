package sozu

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/internal/fsutil"
)

// The write-ahead log holds, since the last page checkpoint, the outcome of
// every mutation of every shard (not the UpdateFunc: replay must not re-run
// record logic). One log for all shards, so that an acknowledged batch costs
// one fsync however many shards it touched. The file starts with
//
//	[0:8] "SOZUWAL3"  [8:16] the generation it belongs to
//
// and a record is
//
//	[0:4] body length  [4:8] CRC32C of [8:] to the body's end
//	[8:12] generation (low 32 bits)  [12:] body
//
// and the body is [kind][shard][payload]. Each shard appends its records in
// the order it applied them, so replaying the records of one shard in log
// order rebuilds exactly that shard's state. The payloads:
//
//	put     entry fields (appendEntryFields: key, flags, terms, expiry),
//	        the value
//	patch   entry fields, uvarint the old value's length, [4] its CRC32C,
//	        the edits that make the new value of it (patch.go)
//	remove  key
//	meta    uvarint name length, name, value
//	height  [4] height
//	mark    [8] durable length, [8] the write's end (below)
//
// A patch records an update of a record whose old value a replay finds
// where the update found it (entry.lastsUntilRemoved), when its edits take
// at most half the new value: a spend or a set-mined changes a few dozen
// bytes of a record of hundreds. Replay checks the old value's length and
// checksum before it applies the edits; a mismatch is corruption. A log
// whose header names another format is refused (FormatError).
//
// Every write of records to the file opens and closes with a mark
// (walWritten, shard byte markShard): the length of the log that was
// durable when the write was made, and where the write ends. A power loss
// can keep any of the blocks that no fsync covered yet, in any order, so
// after one the log may show a bad record followed by valid ones of its
// generation. The marks tell recovery whether that is such a tear or
// damage to records an fsync had made durable (readLog).
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
const (
	logMagic = "SOZUWAL3"
	logFileHeaderSize = 16
	walHeaderSize     = 12
	walPut            = 1
	walRemove         = 2
	walMeta           = 3
	walHeight         = 4
	walWritten        = 5
	walPatch          = 6
	// markShard is the shard byte of a mark, which belongs to no shard.
	markShard = 0xFF
	// maxShards is the most shards a store may have: a record names its
	// shard in one byte, and markShard is none of them.
	maxShards = 128
	// markRecordSize is a mark's length: header, kind, shard byte, the
	// durable length and the write's end.
	markRecordSize = walHeaderSize + 2 + 16
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

// end sets the record's length; the log stamps its generation and
// checksum as it takes the records (stamp), since only it knows which
// generation they land in.
func (w *logRecords) end(start int) {
	binary.LittleEndian.PutUint32(w.buf[start-walHeaderSize:], uint32(len(w.buf)-start))
}

// stamp sets the generation and checksum of every record in buf.
func stamp(buf []byte, gen uint64) {
	for len(buf) > 0 {
		n := walHeaderSize + int(binary.LittleEndian.Uint32(buf))
		binary.LittleEndian.PutUint32(buf[8:], uint32(gen))
		binary.LittleEndian.PutUint32(buf[4:], checksum(buf[8:n]))
		buf = buf[n:]
	}
}

// fillMark writes into buf (markRecordSize bytes) the mark of a write
// made when durable bytes of the log were durable and ending at end; the
// log stamps it with the write's records.
func fillMark(buf []byte, durable, end int64) {
	binary.LittleEndian.PutUint32(buf, markRecordSize-walHeaderSize)
	buf[walHeaderSize], buf[walHeaderSize+1] = walWritten, markShard
	binary.LittleEndian.PutUint64(buf[walHeaderSize+2:], uint64(durable))
	binary.LittleEndian.PutUint64(buf[walHeaderSize+10:], uint64(end))
}

// readMark parses body if it is a mark's: the durable length when its
// write was made, and the write's end.
func readMark(body []byte) (durable, end int64, ok bool) {
	if len(body) != markRecordSize-walHeaderSize || body[0] != walWritten || body[1] != markShard {
		return 0, 0, false
	}
	return int64(binary.LittleEndian.Uint64(body[2:])), int64(binary.LittleEndian.Uint64(body[10:])), true
}

func (w *logRecords) logPut(e *entry, value []byte) {
	start := w.begin(walPut)
	w.appendEntryFields(e)
	w.buf = append(w.buf, value...)
	w.end(start)
}

// logUpdate logs e's new value as a patch of old, the value it replaces,
// when the patch's edits take at most half the new value, and whole
// otherwise. old is nil when there is none a replay can count on
// (entry.lastsUntilRemoved). value may share memory with old.
func (w *logRecords) logUpdate(e *entry, old, value []byte) {
	if old == nil {
		w.logPut(e, value)
		return
	}
	start := w.begin(walPatch)
	w.appendEntryFields(e)
	patch := len(w.buf)
	w.buf = binary.AppendUvarint(w.buf, uint64(len(old)))
	sum := len(w.buf)
	w.buf = append(w.buf, 0, 0, 0, 0) // the old value's checksum, once the patch is worth it
	w.buf = appendEdits(w.buf, old, value)
	if 2*(len(w.buf)-patch) > len(value) {
		w.buf = w.buf[:start-walHeaderSize]
		w.logPut(e, value)
		return
	}
	binary.LittleEndian.PutUint32(w.buf[sum:], checksum(old))
	w.end(start)
}

// appendEntryFields appends what a put or patch record holds of e besides
// its value: the key, the consumed flag, the terms and the expiry.
func (w *logRecords) appendEntryFields(e *entry) {
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

	syncMu sync.Mutex // one fsync at a time
	// synced is the size at the last fsync: what a crash cannot take.
	// Written under syncMu; atomic because a write's marks read it under
	// mu, which the fsync must not wait for.
	synced atomic.Int64
	syncs  uint64 // fsyncs so far
	// syncTime is the time the fsyncs took: what SyncAlways costs a
	// caller beyond the work itself.
	syncTime time.Duration
}

func newLog(f *os.File, path string, gen uint64, size int64) *writeAheadLog {
	w := &writeAheadLog{f: f, path: path, gen: gen, size: size, allocated: size}
	w.synced.Store(size)
	w.idle.L = &w.mu
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
	if len(w.pending) >= logBufferBytes {
		if err := w.writePending(); err != nil {
			return 0, err
		}
	}
	return w.size + int64(len(w.pending)), nil
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
// it already is. Before its fsync it waits for the shards still applying a
// group (they append without blocking), so one fsync covers a whole
// batch. It must not be called from inside a group: that shard would wait
// for itself.
func (w *writeAheadLog) syncTo(end int64) error {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	if w.synced.Load() >= end {
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
	w.synced.Store(target)
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

func (w *writeAheadLog) close() error {
	if w.f == nil { // a log that failed to start
		return nil
	}
	return w.f.Close()
}

// logTail describes what recovery found after the last good record.
type logTail struct {
	// goodBytes is the length of the valid prefix, the file header included.
	goodBytes int64
	// droppedBytes is how much followed it that this generation wrote;
	// non-zero means a torn tail.
	droppedBytes int64
	// staleBytes is how much of the file past the valid prefix holds an
	// earlier generation's records (a recycled file) or only zeros (a
	// growing one): not a tear.
	staleBytes int64
	// midLog reports a bad record followed by a valid one: not a torn
	// write but corruption inside the log.
	midLog bool
	detail string
}

// readLog calls apply for every valid record of generation gen in the log
// at path and reports where the valid prefix ends. The body passed to
// apply is valid until apply returns.
//
// The records of a write are applied when its closing mark is read: a
// crash in the middle of a write (a SIGKILL stops it at a page boundary)
// takes the whole write, so recovery never keeps part of a shard's group
// of requests, such as the first of two updates of one key in a batch.
// Nothing in that write was durable: under SyncAlways its requests wait
// for the fsync that follows it, under SyncBlock for the next Checkpoint.
//
// The prefix ends at a record that is not whole and valid. If a record
// of this generation follows, the log is damaged in its middle. If an
// earlier generation's follows first, or nothing does, what lies between
// is a tear when it starts with a header of this generation, and else
// the rest of an earlier generation's record: the end of this one's, in a
// recycled file. (A tear that cut the header too reads as such an end; it
// cost only writes no fsync had covered.) The scan stops at the first
// earlier record, so a recycled file is not read to its end.
func readLog(path string, gen uint64, apply func(body []byte) error) (logTail, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return logTail{}, nil
	}
	if err != nil {
		return logTail{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return logTail{}, err
	}
	w := &logWindow{f: f, size: st.Size()}
	head, err := w.at(0, logFileHeaderSize)
	if err != nil {
		return logTail{}, err
	}
	// A log's header is durable before any record is written (createLog,
	// recycle): a file without one is a log whose creation a crash cut
	// short, and holds nothing.
	if len(head) < logFileHeaderSize || bytes.Count(head, []byte{0}) == len(head) {
		return logTail{}, nil
	}
	if format := string(head[:len(logMagic)]); format != logMagic {
		return logTail{}, &FormatError{Path: path, Found: format, Want: logMagic}
	}
	if got := binary.LittleEndian.Uint64(head[8:]); got != gen {
		return logTail{}, &engine.CorruptionError{Engine: "sozu", Where: path,
			Detail: fmt.Sprintf("the log belongs to generation %d, the checkpoint names %d", got, gen)}
	}
	off := int64(logFileHeaderSize)
	var why string
	// writeEnd is where the last write the valid prefix has a mark of ends.
	var writeEnd int64
	// open holds the records of the write being read, until its closing
	// mark.
	var open *openWrite
	applyAt := func(off int64, body []byte) error {
		if err := apply(body); err != nil {
			return &engine.CorruptionError{Engine: "sozu", Where: fmt.Sprintf("%s offset %d", path, off), Detail: err.Error()}
		}
		return nil
	}
scan:
	for off < w.size {
		r, err := w.record(off, gen)
		if err != nil {
			return logTail{}, err
		}
		if why = r.why; why != "" || r.gen != uint32(gen) {
			break
		}
		if _, end, ok := readMark(r.body); ok {
			closing := end == off+markRecordSize
			switch {
			case open == nil && end > off+markRecordSize: // an opening mark
				open = &openWrite{start: off, end: end}
				writeEnd = end
			case open != nil && closing && end == open.end:
				if err := open.applyAll(applyAt); err != nil {
					return logTail{}, err
				}
				open = nil
			default:
				why = "write mark out of place"
				break scan
			}
		} else if open != nil {
			open.add(off, r.body)
		} else {
			why = "record outside a write's marks"
			break
		}
		off += int64(r.length)
	}
	tail, err := w.tailAt(off, why, gen, writeEnd)
	if err != nil || open == nil {
		return tail, err
	}
	// The write from open.start is not whole: drop it with what follows.
	tail.droppedBytes += off - open.start
	tail.goodBytes = open.start
	if tail.detail == "" {
		tail.detail = fmt.Sprintf("its records end at offset %d", off)
	}
	tail.detail = fmt.Sprintf("the write at offset %d (%d bytes) does not read whole: %s", open.start, open.end-open.start, tail.detail)
	return tail, nil
}

// openWrite is a write of the log whose opening mark was read and whose
// closing mark was not yet: its records, held until it proves whole.
type openWrite struct {
	start, end int64 // the write's offsets, from its opening mark
	records    []heldRecord
}

// heldRecord is a record's body (a copy: the window it was read from
// moves on) and its offset, for the error that names it.
type heldRecord struct {
	off  int64
	body []byte
}

func (o *openWrite) add(off int64, body []byte) {
	o.records = append(o.records, heldRecord{off, slices.Clone(body)})
}

func (o *openWrite) applyAll(apply func(off int64, body []byte) error) error {
	for _, r := range o.records {
		if err := apply(r.off, r.body); err != nil {
			return err
		}
	}
	return nil
}

// tailAt describes the log past its valid records, which end at off; why
// is what is wrong with the record there ("" if it is whole: an earlier
// generation's).
func (w *logWindow) tailAt(off int64, why string, gen uint64, writeEnd int64) (logTail, error) {
	tail := logTail{goodBytes: off}
	if off >= w.size {
		return tail, nil
	}
	if why == "" {
		// An earlier generation's whole record: this one's ended here.
		tail.staleBytes = w.size - off
		return tail, nil
	}
	unwritten, err := w.zeroFrom(off)
	if err != nil {
		return logTail{}, err
	}
	if unwritten {
		// The zeros a growing log was extended with (extend): nothing was
		// written here.
		tail.staleBytes = w.size - off
		return tail, nil
	}
	torn := false
	if head, err := w.at(off, walHeaderSize); err == nil && len(head) == walHeaderSize {
		torn = binary.LittleEndian.Uint32(head[8:]) == uint32(gen)
	}
	earlier, after, err := w.recordsAfterTear(off, gen, writeEnd)
	if err != nil {
		return logTail{}, err
	}
	if after.damage != "" {
		tail.midLog = true
		tail.droppedBytes = w.size - off
		tail.detail = fmt.Sprintf("%s at offset %d, yet %s", why, off, after.damage)
		return tail, nil
	}
	if torn || earlier == w.size || after.records > 0 {
		tail.droppedBytes, tail.detail = earlier-off, fmt.Sprintf("%s at offset %d", why, off)
	}
	if after.records > 0 {
		tail.detail = fmt.Sprintf("%s at offset %d, then %d valid records written before it was durable (a power loss kept their blocks, not its)", why, off, after.records)
	}
	tail.staleBytes = w.size - off - tail.droppedBytes
	return tail, nil
}

// zeroFrom reports whether the file holds only zeros from off to its end.
func (w *logWindow) zeroFrom(off int64) (bool, error) {
	for off < w.size {
		chunk, err := w.at(off, len(zeroBlock))
		if err != nil {
			return false, err
		}
		if !bytes.Equal(chunk, zeroBlock[:len(chunk)]) {
			return false, nil
		}
		off += int64(len(chunk))
	}
	return true, nil
}

// afterTear is what follows a bad record of the log: how many valid
// records of its generation, and why they show damage rather than a tear
// ("" if they do not).
type afterTear struct {
	records int
	damage  string
}

// recordsAfterTear looks at what follows the bad record at off, up to the
// first record of an earlier generation (whose offset it returns, or the
// file's size). writeEnd is the end of the write the last mark before off
// described.
//
// A valid record of this generation after a bad one is damage unless it
// was written before the bad record was durable: then nothing past the
// bad record was acknowledged, and a power loss that kept this record's
// block but not the bad one's explains what the disk shows. A mark says
// so of its write (its durable length is at most off), and of every write
// before it, since the durable length only grows; the write the bad record
// belongs to was made before it was durable by definition. A record no
// such mark vouches for, or a mark of a write made after off was durable,
// is damage. (Damage to the last write an fsync covered, with nothing
// written after the fsync, reads as a tear as a damaged final record
// does: no later record says the fsync happened.)
func (w *logWindow) recordsAfterTear(off int64, gen uint64, writeEnd int64) (int64, afterTear, error) {
	var after afterTear
	vouched := writeEnd // records before this offset were written before off was durable
	lastRecord := int64(-1)
	for next := off + 1; next+walHeaderSize < w.size; {
		r, err := w.record(next, gen)
		if err != nil {
			return 0, after, err
		}
		if r.why != "" {
			next++
			continue
		}
		if r.gen != uint32(gen) {
			return next, after, nil
		}
		if durable, end, ok := readMark(r.body); ok {
			if durable > off {
				after.damage = fmt.Sprintf("a write made once the log was durable to offset %d follows at offset %d", durable, next)
				return w.size, after, nil
			}
			vouched = max(vouched, end)
		} else {
			after.records++
			lastRecord = next
		}
		next += int64(r.length)
	}
	if lastRecord >= vouched {
		after.damage = fmt.Sprintf("a valid record follows at offset %d", lastRecord)
	}
	return w.size, after, nil
}

// logWindow reads a log file forward, holding the stretch being looked at.
type logWindow struct {
	f    *os.File
	size int64
	base int64 // the file offset of data[0]
	data []byte
}

// logReadChunk is how much a logWindow reads at a time.
const logReadChunk = 1 << 20

// at returns the file's bytes from off, n of them or fewer at its end.
func (w *logWindow) at(off int64, n int) ([]byte, error) {
	end := min(off+int64(n), w.size)
	if off < w.base || end > w.base+int64(len(w.data)) {
		size := int(min(max(end, off+logReadChunk), w.size) - off)
		w.data = slices.Grow(w.data[:0], size)[:size]
		if _, err := w.f.ReadAt(w.data, off); err != nil {
			return nil, err
		}
		w.base = off
	}
	return w.data[off-w.base : end-w.base], nil
}

// logRecord is what reading a log at an offset found: a whole, valid
// record of length bytes with its body and generation, or why not.
type logRecord struct {
	body   []byte
	gen    uint32
	length int
	why    string
}

func (w *logWindow) record(off int64, gen uint64) (logRecord, error) {
	head, err := w.at(off, walHeaderSize)
	if err != nil {
		return logRecord{}, err
	}
	n, recGen, why := recordHeaderAt(head, gen)
	if why != "" {
		return logRecord{why: why}, nil
	}
	data, err := w.at(off, n)
	if err != nil {
		return logRecord{}, err
	}
	body, why := recordBody(data, n)
	if why != "" {
		return logRecord{why: why}, nil
	}
	return logRecord{body: body, gen: recGen, length: n}, nil
}

// recordHeaderAt reads the record header data starts with: the record's length
// (header included) and generation, or why no record can start there. A
// generation after gen cannot be a record's: scanning a recycled file
// byte by byte then reads and checksums only what could be a record.
func recordHeaderAt(data []byte, gen uint64) (int, uint32, string) {
	if len(data) < walHeaderSize {
		return 0, 0, "partial record header"
	}
	n := int(binary.LittleEndian.Uint32(data))
	if n < 1 || n > walMaxBody {
		return 0, 0, "record length out of range"
	}
	recGen := binary.LittleEndian.Uint32(data[8:])
	if recGen > uint32(gen) {
		return 0, 0, "record of a later generation"
	}
	return walHeaderSize + n, recGen, ""
}

// recordBody checks the record of n bytes (recordHeaderAt's length) that data
// starts with and returns its body, or why it is not whole and valid.
func recordBody(data []byte, n int) ([]byte, string) {
	if len(data) < n {
		return nil, "record cut short"
	}
	if checksum(data[8:n]) != binary.LittleEndian.Uint32(data[4:]) {
		return nil, "record checksum mismatch"
	}
	body := data[walHeaderSize:n]
	if len(body) < 2 || body[0] < walPut || body[0] > walPatch {
		return nil, fmt.Sprintf("record kind %d", body[0])
	}
	if _, _, ok := readMark(body); body[0] == walWritten && !ok {
		return nil, "malformed write mark"
	}
	return body, ""
}

// decodeEntryFields parses the start of a put or patch record's payload
// (appendEntryFields) and returns the entry and the rest: a put's value, a
// patch's description.
func decodeEntryFields(body []byte) (entry, []byte, error) {
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

// patchBase is what a patch record says of the value it was made against.
type patchBase struct {
	length uint64
	sum    uint32
}

// decodePatch parses a patch record's payload: the entry, its base and
// the edits that make the new value of the base.
func decodePatch(body []byte) (entry, patchBase, []byte, error) {
	e, rest, err := decodeEntryFields(body)
	if err != nil {
		return e, patchBase{}, nil, err
	}
	var base patchBase
	if base.length, rest, err = readUvarint(rest); err != nil {
		return e, base, nil, err
	}
	if len(rest) < 4 {
		return e, base, nil, io.ErrUnexpectedEOF
	}
	base.sum = binary.LittleEndian.Uint32(rest)
	return e, base, rest[4:], nil
}
