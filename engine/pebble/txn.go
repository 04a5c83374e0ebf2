package pebble

import (
	"errors"

	pebbledb "github.com/cockroachdb/pebble"

	"github.com/utxostore/utxostore/engine"
)

// txn builds the pebble batch of one write call. It runs under the engine's
// writer lock and remembers every record it has read or written, so a later
// update of the same key in the batch sees the earlier one's result (the
// batch itself is not readable until it is applied).
type txn struct {
	e    *Engine
	b    *pebbledb.Batch
	now  int64
	seen map[engine.Key]*record // nil value: no record
	// durable: commit waits for the WAL fsync (Engine.durable).
	durable bool
}

func (e *Engine) newTxn(now int64, durable bool) *txn {
	return &txn{e: e, b: e.db.NewBatch(), now: now, seen: make(map[engine.Key]*record), durable: durable}
}

// current returns the stored record of k, expired or not, or nil.
func (x *txn) current(k engine.Key) (*record, error) {
	if r, ok := x.seen[k]; ok {
		return r, nil
	}
	r, err := x.e.load(k)
	if err != nil {
		return nil, err
	}
	x.seen[k] = r
	return r, nil
}

// put replaces old (nil when there is none) with a new version of k.
func (x *txn) put(k engine.Key, old *record, terms engine.Terms, expires int64, value []byte) {
	enc := encodeRecord(terms, expires, value)
	_ = x.b.Set(recordKey(k), enc, nil) // a batch Set only fails on a committed batch
	var oldTerms engine.Terms
	var oldExpires int64
	if old != nil {
		oldTerms, oldExpires = old.terms, old.expires
	}
	x.moveIndexes(k, oldTerms, terms)
	if oldExpires != expires {
		if oldExpires != 0 {
			_ = x.b.Delete(ttlKey(oldExpires, k), nil)
		}
		if expires != 0 {
			_ = x.b.Set(ttlKey(expires, k), nil, nil)
		}
	}
	// The remembered value aliases the encoded entry: the batch copied it,
	// and nothing else holds it.
	x.seen[k] = &record{terms: terms, expires: expires, value: enc[len(enc)-len(value):]}
}

// remove deletes old, the stored version of k, with its index and
// time-to-live entries.
func (x *txn) remove(k engine.Key, old *record) {
	if old == nil {
		return
	}
	_ = x.b.Delete(recordKey(k), nil)
	x.moveIndexes(k, old.terms, engine.Terms{})
	if old.expires != 0 {
		_ = x.b.Delete(ttlKey(old.expires, k), nil)
	}
	x.seen[k] = nil
}

// moveIndexes rewrites only the index entries whose term changed, so an
// update that keeps its terms writes nothing but the record.
func (x *txn) moveIndexes(k engine.Key, from, to engine.Terms) {
	for _, idx := range engine.Indexes {
		a, b := idx.Term(from), idx.Term(to)
		if a == b {
			continue
		}
		if a != 0 {
			_ = x.b.Delete(indexKey(idx, a, k), nil)
		}
		if b != 0 {
			_ = x.b.Set(indexKey(idx, b, k), nil, nil)
		}
	}
}

// commit applies the batch and releases the writer lock, which the caller
// holds. A durable batch is applied to the memtable (and so visible to the
// next writer) before the lock is released, and the fsync is awaited after:
// writers queued behind the lock join the same WAL sync, and because the
// WAL is synced in order a later writer can never be durable before an
// earlier one whose result it read, nor before any lazy write applied
// earlier.
func (x *txn) commit() error {
	e := x.e
	if x.b.Empty() {
		e.writer.Unlock()
		x.b.Close()
		if x.durable && !e.allSynced() {
			// Nothing to write, but the call may have read a result that
			// is not yet durable (a concurrent writer's, or a deferred
			// one), and a durable call covers every write before it: a
			// caller told "done" must not lose what its answer was based
			// on.
			return e.syncLog()
		}
		return nil
	}
	if !x.durable {
		err := e.db.Apply(x.b, pebbledb.NoSync)
		e.lazyWrites.Add(1)
		e.writer.Unlock()
		return errors.Join(err, x.b.Close())
	}
	lazy := e.lazyWrites.Load() // all applied before this batch
	if err := e.db.ApplyNoSyncWait(x.b, pebbledb.Sync); err != nil {
		e.writer.Unlock()
		return errors.Join(err, x.b.Close())
	}
	e.unsynced.Add(1)
	e.writer.Unlock()
	err := x.b.SyncWait()
	e.unsynced.Add(-1)
	if err == nil {
		e.syncedThrough(lazy)
	}
	return errors.Join(err, x.b.Close())
}

// abort drops the batch and releases the writer lock.
func (x *txn) abort() {
	x.e.writer.Unlock()
	x.b.Close()
}

// call runs an UpdateFunc; should it panic, the writer lock is released
// before the panic goes on, so one bad function cannot wedge the engine.
func (x *txn) call(fn engine.UpdateFunc, current []byte) (engine.Mutation, error) {
	defer func() {
		if r := recover(); r != nil {
			x.abort()
			panic(r)
		}
	}()
	return fn(current)
}
