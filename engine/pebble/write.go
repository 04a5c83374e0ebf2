package pebble

import (
	"context"
	"time"

	pebbledb "github.com/cockroachdb/pebble"

	"github.com/utxostore/utxostore/engine"
)

// Update implements engine.Engine: one pebble batch per call, applied
// atomically, in batch order.
func (e *Engine) Update(_ context.Context, updates []engine.Update) ([]error, error) {
	if err := e.enterWriting(); err != nil {
		return nil, err
	}
	defer e.leave()
	errs := make([]error, len(updates))
	e.writer.Lock()
	x := e.newTxn(e.now().UnixNano())
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
	if x.b.Empty() && e.sync == engine.SyncAlways && e.unsynced.Load() > 0 {
		// Nothing to write, but the functions may have read a concurrent
		// writer's result that is not yet durable; a caller told "done"
		// must not lose what its answer was based on.
		x.abort()
		return errs, e.db.LogData(nil, pebbledb.Sync)
	}
	return errs, x.commit()
}

// CreateOnly implements engine.Engine. An expired record counts as absent
// and is replaced.
func (e *Engine) CreateOnly(_ context.Context, key engine.Key, value []byte, ttl time.Duration) error {
	if err := e.enterWriting(); err != nil {
		return err
	}
	defer e.leave()
	now := e.now()
	e.writer.Lock()
	x := e.newTxn(now.UnixNano())
	old, err := x.current(key)
	if err != nil {
		x.abort()
		return err
	}
	if old.live(x.now) {
		x.abort()
		return engine.ErrExists
	}
	x.put(key, old, engine.Terms{}, expiry(now, ttl), value)
	return x.commit()
}

// Delete implements engine.Engine.
func (e *Engine) Delete(_ context.Context, keys []engine.Key) error {
	if err := e.enterWriting(); err != nil {
		return err
	}
	defer e.leave()
	e.writer.Lock()
	x := e.newTxn(e.now().UnixNano())
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
func (e *Engine) PutMeta(_ context.Context, name string, value []byte) error {
	if err := e.enterWriting(); err != nil {
		return err
	}
	defer e.leave()
	return e.db.Set(metaKey(name), value, e.wo)
}

// Checkpoint implements engine.Engine: it removes the records whose time to
// live has passed, then syncs the WAL, which makes every write applied
// before it durable whatever the sync mode.
func (e *Engine) Checkpoint(_ context.Context, _ uint32) error {
	if err := e.enterWriting(); err != nil {
		return err
	}
	defer e.leave()
	if err := e.sweepExpired(e.now().UnixNano()); err != nil {
		return err
	}
	return e.db.LogData(nil, pebbledb.Sync)
}

// sweepExpired removes every record whose expiry is at or before now, found
// through the time-to-live entries, in one unsynced batch (the caller
// syncs).
func (e *Engine) sweepExpired(now int64) error {
	e.writer.Lock()
	x := e.newTxn(now)
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
	x.abort()
	return err
}
