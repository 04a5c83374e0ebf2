package sozu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/utxostore/utxostore/engine"
)

// RecoveryReport says what Open found in the log: how much it replayed and
// what it dropped. A non-zero DroppedBytes is a torn tail (a crash in the
// middle of a write): it is truncated, never silently accepted.
type RecoveryReport struct {
	ReplayedRecords int
	ReplayedBytes   int64
	DroppedBytes    int64
	Detail          string
}

// DamagedLogError is Open's refusal of a log damaged before its end, as
// opposed to torn at it: writes logged after the damage may have been
// acknowledged. Nothing is changed; Options.DiscardCorruptLog opens the
// store by dropping the log from the damaged write on. It unwraps to the
// *engine.CorruptionError that says where.
type DamagedLogError struct {
	*engine.CorruptionError
}

func (e *DamagedLogError) Unwrap() error { return e.CorruptionError }

// openShard loads checkpoint gen of shard id (none when gen is 0) and the
// in-memory filter, indexes and counters: from the checkpoint, or derived
// from the buckets when it has none of them; Engine.recover then replays
// the log.
func openShard(dir string, id int, gen uint64, o Options) (*shard, error) {
	pages, err := openPageStore(pagesPath(dir, id), o.ReadOnly)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*shard, error) {
		pages.close()
		return nil, err
	}
	img := &checkpointImage{}
	if gen > 0 {
		path := checkpointPath(dir, id, gen)
		data, err := os.ReadFile(path)
		if err != nil {
			return fail(fmt.Errorf("sozu: checkpoint %d of shard %d: %w", gen, id, err))
		}
		if img, err = decodeCheckpoint(path, data, newLayout(o)); err != nil {
			var le *layoutError
			var fe *FormatError
			if errors.As(err, &le) || errors.As(err, &fe) {
				return fail(err)
			}
			return fail(&engine.CorruptionError{Engine: "sozu", Where: path, Detail: err.Error()})
		}
	}
	values, err := openValueLog(valueLogPath(dir, id, img.vlogGen), img.vlogGen, o)
	if err != nil {
		return fail(err)
	}
	s := &shard{id: id, dir: dir, opts: o, inbox: make(chan *request, maxGroup), records: logRecords{shard: byte(id)}}
	s.table = newTable(o, pages, values, func() int64 { return time.Now().UnixNano() })
	fail = func(err error) (*shard, error) {
		pages.close()
		values.close()
		return nil, err
	}
	s.table.height = img.height
	if img.meta != nil {
		s.table.meta = img.meta
	}
	if err := pages.adopt(img.runs); err != nil {
		return fail(err)
	}
	for _, r := range img.runs {
		if r.layer != 0 {
			continue
		}
		spans, err := pages.readRun(r)
		if err != nil {
			return fail(err)
		}
		for k, m := range r.members() {
			b, err := pages.decodeMember(r, spans, k)
			if err != nil {
				return fail(err)
			}
			s.table.layer0[m] = b
		}
	}
	for a, c := range img.pending {
		s.table.pending[a] = c
		s.table.pendingMemory += c.memory
	}
	if err := values.truncate(img.vlogSize); err != nil {
		return fail(err)
	}
	// A filter smaller than Options.FilterKeys asks for is derived anew at
	// the size asked for, as a store without a stored state would be.
	if d := img.derived; d != nil && d.filterCapacity >= uint(o.FilterKeys) {
		s.table.adoptDerived(d)
	} else if err := s.table.rebuild(img.entries); err != nil {
		return fail(err)
	}
	return s, nil
}

// recover replays the log of the current generation into the shards, each
// record into the shard that wrote it, truncates a torn tail and reports
// it, and opens the log for appending.
//
// Read-only, the replay stays in memory: no bucket is written out while
// it runs, the torn tail is reported and left as it is, and the log is
// not opened for appending (a torn write was never acknowledged, so
// ignoring it gives the view a writing open would give).
func (e *Engine) recover() error {
	o := e.opts
	rep := &e.recovery
	replayed := make([]int, len(e.shards))
	path := logPath(e.dir, e.gen)
	tail, err := readLog(path, e.gen, func(body []byte) error {
		id := int(body[1])
		if id >= len(e.shards) {
			return fmt.Errorf("record of shard %d in a store of %d shards", id, len(e.shards))
		}
		if (body[0] == walPut || body[0] == walPatch || body[0] == walRemove) && len(body) >= 2+engine.KeySize {
			if home := e.layout.shard(keyHash((*engine.Key)(body[2:]))); home != id {
				return fmt.Errorf("record of shard %d for a key of shard %d", id, home)
			}
		}
		rep.ReplayedRecords++
		t := e.shards[id].table
		if replayed[id]++; replayed[id]%1024 == 0 && !o.ReadOnly {
			t.dropClean()
			if err := t.settle(); err != nil {
				return err
			}
		}
		return t.replay(body[0], body[2:])
	})
	if err != nil {
		return err
	}
	rep.ReplayedBytes = max(tail.goodBytes-logFileHeaderSize, 0)
	if tail.midLog && !o.DiscardCorruptLog {
		return &DamagedLogError{&engine.CorruptionError{Engine: "sozu", Where: fmt.Sprintf("%s offset %d", path, tail.goodBytes),
			Detail: tail.detail + "; the log is damaged in its middle, not torn at its end (Options.DiscardCorruptLog drops everything from here)"}}
	}
	if tail.droppedBytes > 0 {
		rep.DroppedBytes = tail.droppedBytes
		rep.Detail = fmt.Sprintf("%s; dropped %d bytes from offset %d", tail.detail, tail.droppedBytes, tail.goodBytes)
		what := "a torn final write, truncated"
		if o.ReadOnly {
			what = "a torn final write, left unread by this read-only open"
		}
		if tail.midLog {
			what = "damage inside the log; discarded from there as Options.DiscardCorruptLog asks"
		}
		if o.Logger != nil {
			o.Logger.Warn("recovered the log", "engine", "sozu", "log", path, "detail", rep.Detail, "what", what)
		}
	}
	var log *writeAheadLog
	if o.ReadOnly {
		log = newLog(nil, path, e.gen, tail.goodBytes)
		log.failed = engine.ErrReadOnly
	} else if log, err = e.resumeLog(path, tail); err != nil {
		return err
	} else {
		log.grow = logGrowStep(e.opts)
	}
	e.log = log
	e.logBytesBefore = tail.goodBytes
	for _, s := range e.shards {
		s.log = e.log
	}
	return nil
}

// resumeLog opens the replayed log for appending after its valid prefix.
// A missing log, or one without a header, is started anew. What follows the
// prefix is cut off when it is a tear, and when this generation wrote
// records before the crash: a power loss can leave later records of this
// generation on the disk past a stretch of an earlier one, and appending
// up to one would bring records back that the crash had cut off. Only an
// earlier generation's records after none of this one's are kept, to be
// overwritten.
//
// The records were replayed from what the file shows, which after a
// crash of the process is the page cache: its last writes may not be on
// the disk. They are fsynced before the log is built on, or the store
// would serve (and a Checkpoint would report durable, its log being as
// long as at its last fsync) writes that a power loss could still take.
func (e *Engine) resumeLog(path string, tail logTail) (*writeAheadLog, error) {
	if tail.goodBytes == 0 {
		return createLog(path, e.gen)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	log := newLog(f, path, e.gen, tail.goodBytes)
	records := tail.goodBytes > logFileHeaderSize
	cut := tail.droppedBytes > 0 || (tail.staleBytes > 0 && records)
	if cut {
		err = f.Truncate(tail.goodBytes)
	} else {
		var st os.FileInfo
		if st, err = f.Stat(); err == nil {
			log.allocated = st.Size()
		}
	}
	if err == nil && (cut || records) {
		log.synced.Store(0)
		err = log.sync()
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return log, nil
}

// rebuild derives the table's derivedState (filter, secondary indexes,
// per-layer counters, value-log accounting) from the buckets, for a
// checkpoint that does not store it; entries sizes the filter.
func (t *table) rebuild(entries int64) error {
	t.filter.reset(max(int(entries)+1, t.opts.FilterKeys*7/10))
	return t.walk(func(layer int, b *bucket, held bool) error {
		c := &t.layers[layer]
		if held {
			c.buckets++
		}
		for i := range b.entries {
			e := &b.entries[i]
			c.entries++
			c.bytes += int64(e.encodedSize())
			t.filter.add(&e.key)
			t.indexes.Set(e.key, engine.Terms{}, e.terms)
			if e.outOfLine {
				t.values.adopt(e.ptr)
			}
		}
		return nil
	})
}

// adoptDerived installs the derived state a checkpoint stored.
func (t *table) adoptDerived(d *derivedState) {
	t.filter.f, t.filter.capacity, t.filter.stale = d.filter, d.filterCapacity, false
	t.indexes = d.indexes
	t.layers = d.layers
	t.values.live = d.valuesLive
}

// replay applies one log record, of kind and payload, to the table.
func (t *table) replay(kind byte, body []byte) error {
	switch kind {
	case walPut:
		e, value, err := decodeEntryFields(body)
		if err != nil {
			return err
		}
		loc, found, err := t.lookup(&e.key)
		if err != nil {
			return err
		}
		return t.put(loc, found, e, value)
	case walPatch:
		e, base, edits, err := decodePatch(body)
		if err != nil {
			return err
		}
		loc, found, err := t.lookup(&e.key)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("patch of key %x, which the table does not hold", e.key[:])
		}
		old, err := t.lendValue(&loc.b.entries[loc.pos])
		if err != nil {
			return err
		}
		if uint64(len(old)) != base.length || checksum(old) != base.sum {
			return fmt.Errorf("patch of key %x made against a value of %d bytes, checksum %08x; the table holds %d bytes, checksum %08x",
				e.key[:], base.length, base.sum, len(old), checksum(old))
		}
		if t.patched, err = applyEdits(t.patched[:0], old, edits); err != nil {
			return err
		}
		return t.put(loc, found, e, t.patched)
	case walRemove:
		if len(body) != engine.KeySize {
			return fmt.Errorf("remove record of %d bytes", len(body))
		}
		k := engine.Key(body)
		loc, found, err := t.lookup(&k)
		if err != nil {
			return err
		}
		if found {
			return t.remove(loc)
		}
	case walMeta:
		n, rest, err := readUvarint(body)
		if err != nil || n > uint64(len(rest)) {
			return fmt.Errorf("bad meta record")
		}
		t.meta[string(rest[:n])] = append([]byte{}, rest[n:]...)
	case walHeight:
		if len(body) != 4 {
			return fmt.Errorf("height record of %d bytes", len(body))
		}
		t.height = binary.LittleEndian.Uint32(body)
	}
	return nil
}
