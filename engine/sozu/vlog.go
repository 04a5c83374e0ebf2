package sozu

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"

	"github.com/utxostore/utxostore/engine"
)

// valueLog holds a shard's out-of-line values, appended as
//
//	[0:4] CRC32C of [4:]  [4:8] value length  [8:40] key  [40:] value
//
// A bucket entry points at the record. Overwritten and removed values stay
// in the file as garbage, accounted (Stats.ValueLogGarbage) until a page
// checkpoint compacts the file (vlogcompact.go): the live records are
// copied to a file of a new generation, which the checkpoint names. The
// file is truncated on recovery to the length the last checkpoint knew,
// because the log replay rewrites everything after it.
//
// Appends collect in memory (tail) and reach the file bufferBytes at a
// time (Options.ValueLogBufferBytes), or when a page checkpoint flushes
// them: until the next page checkpoint the write-ahead log rebuilds every
// value (whole, or as a patch of a value the checkpoint or the log holds),
// so the file need not have them sooner, and a write system call per value was the engine's
// largest cost. The last two buffers' worth stay in memory (tail and the
// one before, prev), so reads of recent values, the ones spends reach
// most, cost no system call either. A full buffer is written in the
// background while the shard goes on (the write was a tenth of the
// shard's time); the next full buffer, a flush and close wait for it, so
// its failure stops the store before a checkpoint can count on the file.
//
// A value log opened read-only is not truncated: the records the replay
// appends past the checkpoint's length stay in memory (tail grows without
// reaching the file), and the file's own bytes past that length are never
// read.
type valueLog struct {
	f    *os.File
	path string
	gen  uint64 // the file's generation: 0 for the first, then the checkpoint that compacted into it
	size int64
	live int64 // bytes of records some entry points at

	readOnly    bool
	bufferBytes int
	// inFile is the length of the file's part of the log. tail holds the
	// log from tailStart on (tailStart ≤ inFile ≤ size), prev the bytes
	// just before tailStart.
	inFile    int64
	tailStart int64
	tail      []byte
	prev      []byte
	// scratch receives values read from the file for lend.
	scratch []byte
	// writing, while prev is being written to the file, receives the
	// write's outcome. The bytes before inFile are in the file or in
	// that write.
	writing chan error
}

const vlogHeaderSize = 8 + engine.KeySize

func openValueLog(path string, gen uint64, o Options) (*valueLog, error) {
	f, err := openStoreFile(path, o.ReadOnly)
	if err != nil {
		return nil, err
	}
	return &valueLog{f: f, path: path, gen: gen, readOnly: o.ReadOnly, bufferBytes: o.ValueLogBufferBytes}, nil
}

// openStoreFile opens one of the shard's files for reading and writing,
// creating it if needed, or read-only when it must exist already.
func openStoreFile(path string, readOnly bool) (*os.File, error) {
	if readOnly {
		return os.Open(path)
	}
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
}

func (v *valueLog) truncate(size int64) error {
	st, err := v.f.Stat()
	if err != nil {
		return err
	}
	if st.Size() < size {
		return &engine.CorruptionError{Engine: "sozu", Where: v.path, Detail: fmt.Sprintf("value log holds %d bytes, the checkpoint knew %d", st.Size(), size)}
	}
	v.size, v.inFile, v.tailStart, v.tail, v.prev = size, size, size, nil, nil
	if v.readOnly {
		return nil
	}
	return v.f.Truncate(size)
}

func (v *valueLog) append(k engine.Key, value []byte) (valuePointer, error) {
	p := valuePointer{offset: uint64(v.size), length: uint32(len(value))}
	// The record is built in tail before anything is written out: value
	// may share memory with an earlier record of tail (a lent value), and
	// this keeps it intact while it is copied.
	if cap(v.tail) == 0 && !v.readOnly {
		v.tail = make([]byte, 0, v.bufferBytes+vlogHeaderSize+len(value))
	}
	start := len(v.tail)
	v.tail = binary.LittleEndian.AppendUint32(v.tail, 0)
	v.tail = binary.LittleEndian.AppendUint32(v.tail, uint32(len(value)))
	v.tail = append(v.tail, k[:]...)
	v.tail = append(v.tail, value...)
	binary.LittleEndian.PutUint32(v.tail[start:], checksum(v.tail[start+4:]))
	v.size += int64(vlogHeaderSize + len(value))
	v.live += int64(vlogHeaderSize + len(value))
	if !v.readOnly && len(v.tail) >= v.bufferBytes {
		// prev's memory becomes the next tail once it is in the file.
		if err := v.awaitWrite(); err != nil {
			return p, err
		}
		unwritten, at := v.tail[v.inFile-v.tailStart:], v.inFile
		done := make(chan error, 1)
		go func() { done <- v.write(unwritten, at) }()
		v.writing, v.inFile = done, v.size
		v.prev, v.tail = v.tail, v.prev[:0]
		v.tailStart = v.size
	}
	return p, nil
}

// write writes b at offset at of the file.
func (v *valueLog) write(b []byte, at int64) error {
	if _, err := v.f.WriteAt(b, at); err != nil {
		return fmt.Errorf("sozu: writing value log: %w", err)
	}
	return nil
}

// awaitWrite waits for the background write, if any, and returns its
// error.
func (v *valueLog) awaitWrite() error {
	if v.writing == nil {
		return nil
	}
	err := <-v.writing
	v.writing = nil
	return err
}

// flush writes the appended values the file lacks (no fsync).
func (v *valueLog) flush() error {
	if err := v.awaitWrite(); err != nil {
		return err
	}
	if v.inFile == v.size || v.readOnly {
		return nil
	}
	if err := v.write(v.tail[v.inFile-v.tailStart:], v.inFile); err != nil {
		return err
	}
	v.inFile = v.size
	return nil
}

// close closes the file once no write uses it (a write's error is moot
// then: the next open replays the values from the write-ahead log).
func (v *valueLog) close() {
	v.awaitWrite()
	v.f.Close()
}

// sync makes every appended value durable.
func (v *valueLog) sync() error {
	if err := v.flush(); err != nil {
		return err
	}
	return v.f.Sync()
}

// read returns a copy of the value p points at.
func (v *valueLog) read(k engine.Key, p valuePointer) ([]byte, error) {
	value, err := v.lend(k, p)
	if err != nil {
		return nil, err
	}
	return append(make([]byte, 0, len(value)), value...), nil
}

// lend returns the value p points at in memory the log owns: the caller
// must not change it, and it is valid until the next call on the log.
func (v *valueLog) lend(k engine.Key, p valuePointer) ([]byte, error) {
	n := int64(vlogHeaderSize) + int64(p.length)
	at := int64(p.offset)
	if at+n > v.size {
		return nil, v.corrupt(p, "pointer beyond the end of the value log")
	}
	var rec []byte
	switch prevStart := v.tailStart - int64(len(v.prev)); {
	case at >= v.tailStart:
		rec = v.tail[at-v.tailStart : at-v.tailStart+n]
	case at >= prevStart && at+n <= v.tailStart:
		rec = v.prev[at-prevStart : at-prevStart+n]
	default:
		v.scratch = slices.Grow(v.scratch[:0], int(n))[:n]
		rec = v.scratch
		if _, err := v.f.ReadAt(rec, at); err != nil {
			return nil, fmt.Errorf("sozu: reading value log: %w", err)
		}
	}
	if checksum(rec[4:]) != binary.LittleEndian.Uint32(rec) {
		return nil, v.corrupt(p, "value checksum mismatch")
	}
	if binary.LittleEndian.Uint32(rec[4:]) != p.length || [engine.KeySize]byte(rec[8:vlogHeaderSize]) != k {
		return nil, v.corrupt(p, "value record belongs to another key")
	}
	return rec[vlogHeaderSize:], nil
}

func (v *valueLog) corrupt(p valuePointer, detail string) error {
	return &engine.CorruptionError{Engine: "sozu", Where: fmt.Sprintf("%s offset %d", v.path, p.offset), Detail: detail}
}

// forget accounts a value no entry points at any more.
func (v *valueLog) forget(p valuePointer) { v.live -= int64(vlogHeaderSize) + int64(p.length) }

// adopt accounts a value found in a bucket while deriving the state on
// open (a checkpoint without derivedState).
func (v *valueLog) adopt(p valuePointer) { v.live += int64(vlogHeaderSize) + int64(p.length) }

func (v *valueLog) garbage() int64 { return v.size - v.live }
