package sozu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/utxostore/utxostore/engine"
)

// RecoveryReport says what Open found in one shard's log: how much it
// replayed and what it dropped. A non-zero DroppedBytes is a torn tail
// (a crash in the middle of a write): it is truncated, never silently
// accepted.
type RecoveryReport struct {
	Shard           int
	ReplayedRecords int
	ReplayedBytes   int64
	DroppedBytes    int64
	Detail          string
}

// openShard loads checkpoint gen of shard id (none when gen is 0), rebuilds
// the in-memory filter and indexes from the data, and replays the log.
func openShard(dir string, id int, gen uint64, o Options) (*shard, RecoveryReport, error) {
	rep := RecoveryReport{Shard: id}
	pages, err := openPageStore(pagesPath(dir, id))
	if err != nil {
		return nil, rep, err
	}
	values, err := openValueLog(valueLogPath(dir, id))
	if err != nil {
		pages.close()
		return nil, rep, err
	}
	s := &shard{id: id, dir: dir, opts: o, inbox: make(chan *request, maxGroup)}
	s.table = newTable(o, pages, values, func() int64 { return time.Now().UnixNano() })
	fail := func(err error) (*shard, RecoveryReport, error) {
		pages.close()
		values.f.Close()
		if s.log != nil {
			s.log.close()
		}
		return nil, rep, err
	}

	img := &checkpointImage{dir: map[bucketAddr][]uint32{}}
	if gen > 0 {
		path := checkpointPath(dir, id, gen)
		data, err := os.ReadFile(path)
		if err != nil {
			return fail(fmt.Errorf("sozu: checkpoint %d of shard %d: %w", gen, id, err))
		}
		if img, err = decodeCheckpoint(data, s.table.layout); err != nil {
			var le *layoutError
			if errors.As(err, &le) {
				return fail(err)
			}
			return fail(&engine.CorruptionError{Engine: "sozu", Where: path, Detail: err.Error()})
		}
	}
	s.table.height = img.height
	if img.meta != nil {
		s.table.meta = img.meta
	}
	if err := pages.adopt(img.dir); err != nil {
		return fail(err)
	}
	for a := range img.dir {
		if a.layer == 0 {
			b, err := pages.read(a)
			if err != nil {
				return fail(err)
			}
			s.table.layer0[a.index] = b
		}
	}
	if err := values.truncate(img.vlogSize); err != nil {
		return fail(err)
	}
	if err := s.table.rebuild(img.entries); err != nil {
		return fail(err)
	}

	path := logPath(dir, id, gen)
	tail, err := readLog(path, func(body []byte) error {
		rep.ReplayedRecords++
		rep.ReplayedBytes += int64(walHeaderSize + len(body))
		if rep.ReplayedRecords%1024 == 0 {
			s.table.dropClean()
			if s.table.dirtyBytes() > o.DirtyBytes/o.Shards {
				if err := s.table.flush(); err != nil {
					return err
				}
			}
		}
		return s.table.replay(body)
	})
	if err != nil {
		return fail(err)
	}
	if tail.midLog && !o.DiscardCorruptLog {
		return fail(&engine.CorruptionError{Engine: "sozu", Where: fmt.Sprintf("%s offset %d", path, tail.goodBytes),
			Detail: tail.detail + "; the log is damaged in its middle, not torn at its end (Options.DiscardCorruptLog drops everything from here)"})
	}
	if tail.droppedBytes > 0 {
		rep.DroppedBytes = tail.droppedBytes
		rep.Detail = fmt.Sprintf("%s at offset %d: dropped %d bytes", tail.detail, tail.goodBytes, tail.droppedBytes)
		what := "a torn final write, truncated"
		if tail.midLog {
			what = "damage inside the log; discarded from there as Options.DiscardCorruptLog asks"
		}
		if o.Logf != nil {
			o.Logf("sozu: shard %d log %s: %s (%s)", id, path, rep.Detail, what)
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fail(err)
	}
	s.log = &writeAheadLog{f: f, path: path, size: tail.goodBytes, synced: tail.goodBytes}
	if err := f.Truncate(tail.goodBytes); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	return s, rep, nil
}

// rebuild derives everything the table keeps only in memory (filter,
// secondary indexes, per-layer counters, value-log accounting) from the
// buckets; entries sizes the filter.
func (t *table) rebuild(entries int64) error {
	t.filter.reset(max(int(entries)+1, t.opts.FilterKeys*7/10))
	return t.walk(func(layer int, b *bucket) error {
		c := &t.layers[layer]
		if len(b.entries) > 0 {
			c.buckets++
		}
		for i := range b.entries {
			e := &b.entries[i]
			c.entries++
			c.bytes += int64(e.encodedSize())
			t.filter.add(&e.key)
			t.indexes.set(e.key, e.terms)
			if e.outOfLine {
				t.values.adopt(e.ptr)
			}
		}
		return nil
	})
}

// replay applies one log record to the table.
func (t *table) replay(body []byte) error {
	switch body[0] {
	case walPut:
		e, value, err := decodePut(body[1:])
		if err != nil {
			return err
		}
		loc, found, err := t.lookup(&e.key)
		if err != nil {
			return err
		}
		return t.put(loc, found, e, value)
	case walRemove:
		if len(body) != 1+engine.KeySize {
			return fmt.Errorf("remove record of %d bytes", len(body))
		}
		k := engine.Key(body[1:])
		loc, found, err := t.lookup(&k)
		if err != nil {
			return err
		}
		if found {
			t.remove(loc)
		}
	case walMeta:
		n, rest, err := readUvarint(body[1:])
		if err != nil || n > uint64(len(rest)) {
			return fmt.Errorf("bad meta record")
		}
		t.meta[string(rest[:n])] = append([]byte{}, rest[n:]...)
	case walHeight:
		if len(body) != 5 {
			return fmt.Errorf("height record of %d bytes", len(body))
		}
		t.height = binary.LittleEndian.Uint32(body[1:])
	}
	return nil
}
