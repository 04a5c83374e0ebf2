package sozu

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/utxostore/utxostore/engine"
)

// A value log only grows: every new version of a large record is appended
// and the one before becomes garbage. A record of 20,000 outputs is over a
// megabyte, and spending its outputs one by one appends a megabyte each
// time, so without reclaiming the garbage a store's disk would grow with
// every spend, not with what it holds.
//
// A page checkpoint therefore compacts a shard's value log once its
// garbage exceeds both its live records and Options.ValueLogGarbageBytes:
// the live records are copied, in file order, to the value log of the
// checkpoint's generation, and their entries are pointed at the copies
// (their buckets are written by the same checkpoint, or, for buffered
// changes, stored in it). The previous file is untouched until the
// manifest names the new checkpoint, so a crash or a failed checkpoint
// leaves the previous generation whole; it is deleted once the new one is
// current, and a leftover of a crash is deleted on open. Each compaction
// copies at most as many bytes as garbage it drops, so it at most doubles
// the bytes written for large records.

// valuesWorthCompacting reports whether the value log holds enough garbage
// to compact it at this page checkpoint.
func (t *table) valuesWorthCompacting() bool {
	g := t.values.garbage()
	return g > t.values.live && g >= int64(t.opts.ValueLogGarbageBytes)
}

// compactValues copies the live records of the value log into a new one,
// generation gen at path, and makes it the table's; retired gets the old
// file's path, to delete once the checkpoint naming the new one is
// current. A damaged record stops it with a *engine.CorruptionError and
// leaves the table on the old file.
func (t *table) compactValues(path string, gen uint64) (retired string, err error) {
	old := t.values
	if err := old.flush(); err != nil {
		return "", err
	}
	next, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return "", err
	}
	values := &valueLog{f: next, path: path, gen: gen, bufferBytes: t.opts.ValueLogBufferBytes}
	// The entries are pointed at the copies once all of them are made: a
	// failure while copying leaves every entry on the old file.
	type move struct {
		key engine.Key
		ptr valuePointer
	}
	var moves []move
	src := bufio.NewReaderSize(io.NewSectionReader(old.f, 0, old.size), 1<<20)
	rec := make([]byte, vlogHeaderSize)
	for off, scanned := int64(0), 0; off < old.size; scanned++ {
		if scanned%1024 == 1023 {
			t.dropClean() // the lookups fill the cache with clean buckets
		}
		if _, err := io.ReadFull(src, rec[:vlogHeaderSize]); err != nil {
			return "", t.abandonCompaction(values, old.corrupt(valuePointer{offset: uint64(off)}, "record header cut short"))
		}
		length := int64(binary.LittleEndian.Uint32(rec[4:]))
		if off+vlogHeaderSize+length > old.size {
			return "", t.abandonCompaction(values, old.corrupt(valuePointer{offset: uint64(off)}, "record runs past the end of the value log"))
		}
		rec = slices.Grow(rec[:vlogHeaderSize], int(length))[:vlogHeaderSize+length]
		if _, err := io.ReadFull(src, rec[vlogHeaderSize:]); err != nil {
			return "", t.abandonCompaction(values, fmt.Errorf("sozu: reading value log: %w", err))
		}
		key := engine.Key(rec[8:vlogHeaderSize])
		at := off
		off += int64(len(rec))
		loc, found, err := t.locate(&key)
		if err != nil {
			return "", t.abandonCompaction(values, err)
		}
		if !found || !loc.b.entries[loc.pos].outOfLine || loc.b.entries[loc.pos].ptr.offset != uint64(at) {
			continue // garbage: a later version, or a removed record
		}
		if checksum(rec[4:]) != binary.LittleEndian.Uint32(rec) {
			return "", t.abandonCompaction(values, old.corrupt(valuePointer{offset: uint64(at)}, "value checksum mismatch"))
		}
		p, err := values.append(key, rec[vlogHeaderSize:])
		if err != nil {
			return "", t.abandonCompaction(values, err)
		}
		moves = append(moves, move{key, p})
	}
	if values.live != old.live {
		// Every live record must have been found. A damaged length in a
		// garbage record would throw the scan off the records' framing,
		// and the records after it would be lost with the old file.
		return "", t.abandonCompaction(values, &engine.CorruptionError{Engine: "sozu", Where: old.path,
			Detail: fmt.Sprintf("compaction found %d bytes of live values where the entries point at %d: the file's framing is damaged", values.live, old.live)})
	}
	if err := values.sync(); err != nil {
		return "", t.abandonCompaction(values, err)
	}
	// From here on a failure fails the shard (its entries would be split
	// between the files); the previous generation on disk is whole.
	old.close()
	t.values = values
	t.compactions++
	for i, m := range moves {
		loc, found, err := t.locate(&m.key)
		if err != nil {
			return "", err
		}
		// Settling below may apply buffered changes, whose purge can
		// remove a record not yet repointed (its copy is then garbage,
		// and accounted so).
		if found && loc.b.entries[loc.pos].outOfLine {
			t.repoint(loc, m.ptr)
		}
		if i%1024 == 1023 {
			// Repointed deep buckets are dirty in the cache: keep it
			// within its budget, as the log replay does.
			t.dropClean()
			if err := t.settle(); err != nil {
				return "", err
			}
		}
	}
	return old.path, nil
}

// repoint makes the entry at loc point at p, a copy of its value.
// Offsets only shrink in a compacted file, so the entry never grows.
func (t *table) repoint(loc location, p valuePointer) {
	e := loc.b.entries[loc.pos]
	before := e.encodedSize()
	e.ptr = p
	t.layers[loc.layer].bytes += int64(e.encodedSize() - before)
	if loc.changes != nil {
		t.pendingMemory += loc.changes.replace(loc.pos, e)
		return
	}
	loc.b.replace(loc.pos, e)
	t.markDirty(loc.layer, loc.index)
}

// abandonCompaction removes an unfinished compacted file and returns err.
func (t *table) abandonCompaction(values *valueLog, err error) error {
	values.close()
	os.Remove(values.path)
	return err
}
