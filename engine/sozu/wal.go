package sozu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/utxostore/utxostore/engine"
)

// The write-ahead log of a shard holds, since its last checkpoint, the
// outcome of every mutation (not the UpdateFunc: replay must not re-run
// record logic). A record is
//
//	[0:4] body length  [4:8] CRC32C of the body  [8:] body
//
// and the body starts with its kind.
const (
	walHeaderSize = 8
	walPut        = 1
	walRemove     = 2
	walMeta       = 3
	walHeight     = 4
	// walMaxBody bounds a record so that a corrupt length cannot make
	// recovery allocate gigabytes.
	walMaxBody = 1 << 30
)

type writeAheadLog struct {
	f    *os.File
	path string
	size int64
	// synced is the size at the last fsync: what a crash cannot take.
	synced int64
	buf    []byte
}

func createLog(path string) (*writeAheadLog, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return &writeAheadLog{f: f, path: path}, nil
}

func (w *writeAheadLog) begin() int {
	w.buf = append(w.buf, make([]byte, walHeaderSize)...)
	return len(w.buf)
}

func (w *writeAheadLog) end(start int) {
	body := w.buf[start:]
	binary.LittleEndian.PutUint32(w.buf[start-8:], uint32(len(body)))
	binary.LittleEndian.PutUint32(w.buf[start-4:], checksum(body))
}

func (w *writeAheadLog) logPut(e *entry, value []byte) {
	start := w.begin()
	w.buf = append(w.buf, walPut)
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

func (w *writeAheadLog) logRemove(k engine.Key) {
	start := w.begin()
	w.buf = append(w.buf, walRemove)
	w.buf = append(w.buf, k[:]...)
	w.end(start)
}

func (w *writeAheadLog) logMeta(name string, value []byte) {
	start := w.begin()
	w.buf = append(w.buf, walMeta)
	w.buf = binary.AppendUvarint(w.buf, uint64(len(name)))
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, value...)
	w.end(start)
}

func (w *writeAheadLog) logHeight(h uint32) {
	start := w.begin()
	w.buf = append(w.buf, walHeight)
	w.buf = binary.LittleEndian.AppendUint32(w.buf, h)
	w.end(start)
}

// flush writes the buffered records and, when sync is set, fsyncs them:
// every caller whose record is in the buffer shares this one fsync (group
// commit).
func (w *writeAheadLog) flush(sync bool) error {
	if len(w.buf) == 0 {
		return nil
	}
	if _, err := w.f.WriteAt(w.buf, w.size); err != nil {
		return fmt.Errorf("sozu: writing log %s: %w", w.path, err)
	}
	w.size += int64(len(w.buf))
	w.buf = w.buf[:0]
	if sync {
		return w.sync()
	}
	return nil
}

// sync makes everything written so far durable; it costs nothing when it
// already is (SyncAlways, or a block without writes).
func (w *writeAheadLog) sync() error {
	if w.synced == w.size {
		return nil
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sozu: fsync log %s: %w", w.path, err)
	}
	w.synced = w.size
	return nil
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
	if body[0] < walPut || body[0] > walHeight {
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
