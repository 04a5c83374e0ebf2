package sozu

import (
	"encoding/binary"
	"fmt"
	"os"

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
// A value log opened read-only is not truncated: the records the replay
// appends past the checkpoint's length are kept in memory (inMemory),
// where the file's own bytes past that length are never read.
type valueLog struct {
	f    *os.File
	path string
	gen  uint64 // the file's generation: 0 for the first, then the checkpoint that compacted into it
	size int64
	live int64 // bytes of records some entry points at

	readOnly bool
	// inFile is the length of the file's part of the log; inMemory holds
	// the records appended past it by a read-only store.
	inFile   int64
	inMemory []byte
}

const vlogHeaderSize = 8 + engine.KeySize

func openValueLog(path string, gen uint64, readOnly bool) (*valueLog, error) {
	f, err := openStoreFile(path, readOnly)
	if err != nil {
		return nil, err
	}
	return &valueLog{f: f, path: path, gen: gen, readOnly: readOnly}, nil
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
	v.size, v.inFile = size, size
	if v.readOnly {
		return nil
	}
	return v.f.Truncate(size)
}

func (v *valueLog) append(k engine.Key, value []byte) (valuePointer, error) {
	rec := make([]byte, vlogHeaderSize+len(value))
	binary.LittleEndian.PutUint32(rec[4:], uint32(len(value)))
	copy(rec[8:], k[:])
	copy(rec[vlogHeaderSize:], value)
	binary.LittleEndian.PutUint32(rec[0:], checksum(rec[4:]))
	p := valuePointer{offset: uint64(v.size), length: uint32(len(value))}
	if v.readOnly {
		v.inMemory = append(v.inMemory, rec...)
	} else if _, err := v.f.WriteAt(rec, v.size); err != nil {
		return p, fmt.Errorf("sozu: writing value log: %w", err)
	}
	v.size += int64(len(rec))
	v.live += int64(len(rec))
	return p, nil
}

func (v *valueLog) read(k engine.Key, p valuePointer) ([]byte, error) {
	rec := make([]byte, vlogHeaderSize+int(p.length))
	if int64(p.offset)+int64(len(rec)) > v.size {
		return nil, v.corrupt(p, "pointer beyond the end of the value log")
	}
	if v.readOnly && int64(p.offset) >= v.inFile {
		copy(rec, v.inMemory[int64(p.offset)-v.inFile:])
	} else if _, err := v.f.ReadAt(rec, int64(p.offset)); err != nil {
		return nil, fmt.Errorf("sozu: reading value log: %w", err)
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
