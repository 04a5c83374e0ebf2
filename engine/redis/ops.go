package redis

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/utxostore/utxostore/engine"
)

// syncWrites reports whether a write made with ctx ends with WAIT on the
// masters it writes to: under SyncAlways with Wait > 0, unless ctx defers
// its sync (engine.DeferSync). A replica's acknowledgement covers only its
// own master's stream, so a write that waits while deferred writes are
// outstanding first waits on every master, as Checkpoint does: the
// contract makes a durable write cover every write before it.
func (e *Engine) syncWrites(ctx context.Context) (bool, error) {
	if e.opt.Sync != engine.SyncAlways || e.opt.Wait == 0 {
		return false, nil
	}
	if engine.SyncDeferred(ctx) {
		e.deferred.Add(1)
		return false, nil
	}
	if e.deferred.Load() > e.covered.Load() {
		if err := e.waitEveryMaster(ctx, "deferred"); err != nil {
			return false, err
		}
	}
	return true, nil
}

// coveredThrough records that a wait on every master covered the first n
// deferred writes.
func (e *Engine) coveredThrough(n uint64) {
	for {
		c := e.covered.Load()
		if c >= n || e.covered.CompareAndSwap(c, n) {
			return
		}
	}
}

// readStored reads the stored strings of keys: one pipelined GET per master.
func (e *Engine) readStored(ctx context.Context, keys []engine.Key) ([]stored, error) {
	rk := make([]string, len(keys))
	for i, k := range keys {
		rk[i] = e.lay.record(k)
	}
	cmds, err := e.each(ctx, rk, func(p redis.Pipeliner, i int) redis.Cmder { return p.Get(ctx, rk[i]) }, false)
	if err != nil {
		return nil, err
	}
	out := make([]stored, len(keys))
	for i, c := range cmds {
		raw, err := c.(*redis.StringCmd).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if out[i], err = decode(rk[i], raw); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Get implements engine.Engine.
func (e *Engine) Get(ctx context.Context, keys []engine.Key) ([][]byte, error) {
	if e.closed.Load() {
		return nil, errClosed
	}
	s, err := e.readStored(ctx, keys)
	if err != nil {
		return nil, err
	}
	values := make([][]byte, len(keys))
	for i := range s {
		values[i] = s[i].value
	}
	return values, nil
}

// Delete implements engine.Engine: an unconditional CAS per key, so the
// index entries go with the record.
func (e *Engine) Delete(ctx context.Context, keys []engine.Key) error {
	if err := e.writable(); err != nil {
		return err
	}
	wait, err := e.syncWrites(ctx)
	if err != nil {
		return err
	}
	rk := make([]string, len(keys))
	for i, k := range keys {
		rk[i] = e.lay.record(k)
		e.recent.forget(k)
	}
	_, err = e.each(ctx, rk, func(p redis.Pipeliner, i int) redis.Cmder {
		return e.addCAS(ctx, p, &casWrite{key: keys[i], expect: anyStamp, remove: true})
	}, wait)
	return err
}

// CreateOnly implements engine.Engine with SET NX PX. A reply lost to a
// failed connection is settled by reading the key back: our stamp there
// means our SET ran.
func (e *Engine) CreateOnly(ctx context.Context, key engine.Key, value []byte, ttl time.Duration) error {
	if err := e.writable(); err != nil {
		return err
	}
	wait, err := e.syncWrites(ctx)
	if err != nil {
		return err
	}
	rk := []string{e.lay.record(key)}
	e.recent.forget(key) // it expires: an Update must read it
	stamp := newStamp()
	r := e.newRetrier()
	lost := false
	for {
		_, errs, _ := e.fanOut(ctx, rk, func(p redis.Pipeliner, _ int) redis.Cmder {
			return p.SetArgs(ctx, rk[0], encode(stamp, value), redis.SetArgs{Mode: "NX", TTL: ttl})
		}, wait)
		switch classify(errs[0]) {
		case done:
			if errs[0] == nil {
				return nil
			}
			if !lost {
				return engine.ErrExists
			}
			s, err := e.readStored(ctx, []engine.Key{key})
			if err != nil {
				return err
			}
			if s[0].present && s[0].stamp == stamp {
				return nil
			}
			return engine.ErrExists
		case uncertain:
			lost = true
		case notRun:
		default:
			return e.check(errs[0])
		}
		if err := r.wait(ctx, errs[0]); err != nil {
			return e.check(err)
		}
	}
}

// GetMeta implements engine.Engine. Metadata is one hash on bucket 0's slot.
func (e *Engine) GetMeta(ctx context.Context, name string) ([]byte, error) {
	if e.closed.Load() {
		return nil, errClosed
	}
	key := e.lay.meta()
	cmds, err := e.each(ctx, []string{key}, func(p redis.Pipeliner, _ int) redis.Cmder { return p.HGet(ctx, key, name) }, false)
	if err != nil {
		return nil, err
	}
	v, err := cmds[0].(*redis.StringCmd).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return v, err
}

// PutMeta implements engine.Engine.
func (e *Engine) PutMeta(ctx context.Context, name string, value []byte) error {
	if err := e.writable(); err != nil {
		return err
	}
	wait, err := e.syncWrites(ctx)
	if err != nil {
		return err
	}
	key := e.lay.meta()
	_, err = e.each(ctx, []string{key}, func(p redis.Pipeliner, _ int) redis.Cmder { return p.HSet(ctx, key, name, value) }, wait)
	return err
}
