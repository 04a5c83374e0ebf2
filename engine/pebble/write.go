package pebble

import (
	"context"
	"time"

	pebbledb "github.com/cockroachdb/pebble"

	"github.com/utxostore/utxostore/engine"
)

// Update implements engine.Engine: one pebble batch per call, applied
// atomically, in batch order.
func (e *Engine) Update(ctx context.Context, updates []engine.Update) ([]error, error) {
	if err := e.enterWriting(); err != nil {
		return nil, err
	}
	defer e.leave()
	errs := make([]error, len(updates))
	e.writer.Lock()
	x := e.newTxn(e.now().UnixNano(), e.durable(ctx))
	for i, u := range updates {
		old, err := x.current(u.Key)
		if err != nil {
			x.abort()
			return nil, err
		}
		var current []byte
		if old.live(x.now) {
			// A copy: the function may keep or change what it is given.
			current = clone(old.value)
		}
		m, err := x.call(u.Fn, current)
		if err != nil {
			errs[i] = err
			m.Action = engine.Keep
		}
		switch m.Action {
		case engine.Put:
			x.put(u.Key, old, m.Terms, 0, m.Value)
		case engine.Remove:
			x.remove(u.Key, old)
		default:
			if old != nil && !old.live(x.now) {
				x.remove(u.Key, old) // an expired record nobody replaced: clean it now
			}
		}
	}
	return errs, x.commit()
}

// CreateOnly implements engine.Engine. An expired record counts as absent
// and is replaced.
func (e *Engine) CreateOnly(ctx context.Context, key engine.Key, value []byte, ttl time.Duration) error {
	if err := e.enterWriting(); err != nil {
		return err
	}
	defer e.leave()
	now := e.now()
	e.writer.Lock()
	x := e.newTxn(now.UnixNano(), e.durable(ctx))
	old, err := x.current(key)
	if err != nil {
		x.abort()
		return err
	}
	if old.live(x.now) {
		// Refused on what it read: the empty commit makes that durable.
		if err := x.commit(); err != nil {
			return err
		}
		return engine.ErrExists
	}
	x.put(key, old, engine.Terms{}, expiry(now, ttl), value)
	return x.commit()
}

// Delete implements engine.Engine.
func (e *Engine) Delete(ctx context.Context, keys []engine.Key) error {
	if err := e.enterWriting(); err != nil {
		return err
	}
	defer e.leave()
	e.writer.Lock()
	x := e.newTxn(e.now().UnixNano(), e.durable(ctx))
	for _, k := range keys {
		old, err := x.current(k)
		if err != nil {
			x.abort()
			return err
		}
		x.remove(k, old)
	}
	return x.commit()
}

// PutMeta implements engine.Engine. It needs no read, so it bypasses the
// writer lock; pebble orders and group-commits it with everything else.
func (e *Engine) PutMeta(ctx context.Context, name string, value []byte) error {
	if err := e.enterWriting(); err != nil {
		return err
	}
	defer e.leave()
	if !e.durable(ctx) {
		err := e.db.Set(metaKey(name), value, pebbledb.NoSync)
		e.lazyWrites.Add(1)
		return err
	}
	lazy := e.lazyWrites.Load()
	if err := e.db.Set(metaKey(name), value, pebbledb.Sync); err != nil {
		return err
	}
	e.syncedThrough(lazy)
	return nil
}

// Checkpoint implements engine.Engine: it removes the records whose time to
// live has passed, then syncs the WAL, which makes every write applied
// before it durable whatever the sync mode. When a durable write has
// already synced everything, it costs no fsync.
func (e *Engine) Checkpoint(_ context.Context, _ uint32) error {
	if err := e.enterWriting(); err != nil {
		return err
	}
	defer e.leave()
	if err := e.sweepExpired(e.now().UnixNano()); err != nil {
		return err
	}
	if e.allSynced() {
		return nil
	}
	return e.syncLog()
}

// sweepExpired removes every record whose expiry is at or before now, found
// through the time-to-live entries, in one unsynced batch (the caller
// syncs).
func (e *Engine) sweepExpired(now int64) error {
	e.writer.Lock()
	x := e.newTxn(now, false)
	lower, _ := prefixBounds(prefixTTL)
	upper := ttlKey(now+1, engine.Key{})
	it, err := e.db.NewIter(&pebbledb.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		x.abort()
		return err
	}
	var expired []engine.Key
	for it.First(); it.Valid(); it.Next() {
		var k engine.Key
		copy(k[:], it.Key()[1+8:])
		expired = append(expired, k)
	}
	if err := it.Close(); err != nil {
		x.abort()
		return err
	}
	for _, k := range expired {
		old, err := x.current(k)
		if err != nil {
			x.abort()
			return err
		}
		if old != nil && old.expires != 0 && !old.live(now) {
			x.remove(k, old)
		}
	}
	if x.b.Empty() {
		x.abort()
		return nil
	}
	err = e.db.Apply(x.b, pebbledb.NoSync)
	e.lazyWrites.Add(1)
	x.abort()
	return err
}
