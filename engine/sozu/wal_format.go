package sozu

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/utxostore/utxostore/engine"
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
// This file holds the format: encoding records into a shard's buffer and
// decoding them. wal_write.go holds the log file that takes the buffers
// and its group commit, wal_read.go the reading of a log at recovery, and
// wal_tear.go what recovery makes of what follows the last valid record.
const (
	// logMagic names the log's format, the only one this release reads.
	logMagic          = "SOZUWAL3"
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
