package sozu

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/utxostore/utxostore/engine"
)

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
