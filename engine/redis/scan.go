package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/utxostore/utxostore/engine"
)

// Scan implements engine.Engine: ZRANGEBYSCORE on the index's sorted set of
// every bucket, one pipeline per master.
func (e *Engine) Scan(ctx context.Context, idx engine.Index, lo, hi uint32, fn func(engine.Key, uint32) error) error {
	if e.closed.Load() {
		return errClosed
	}
	keys := make([]string, e.lay.buckets)
	for b := range keys {
		keys[b] = e.lay.index(b, idx)
	}
	rng := &redis.ZRangeBy{Min: strconv.FormatUint(uint64(lo), 10), Max: strconv.FormatUint(uint64(hi), 10)}
	cmds, err := e.each(ctx, keys, func(p redis.Pipeliner, b int) redis.Cmder {
		return p.ZRangeByScoreWithScores(ctx, keys[b], rng)
	}, false)
	if err != nil {
		return err
	}
	for b, c := range cmds {
		for _, z := range c.(*redis.ZSliceCmd).Val() {
			m, _ := z.Member.(string)
			if len(m) != engine.KeySize {
				return &engine.CorruptionError{Engine: Name, Where: fmt.Sprintf("index %q", keys[b]), Detail: fmt.Sprintf("member of %d bytes", len(m))}
			}
			var k engine.Key
			copy(k[:], m)
			if err := fn(k, uint32(z.Score)); err != nil {
				return err
			}
		}
	}
	return nil
}

// scanCount is the COUNT hint of each SCAN step, and so the number of
// values fetched per pipelined round of GETs.
const scanCount = 1000

// ForEach implements engine.Engine: SCAN every master for the namespace's
// record keys and GET their values, one pipeline per SCAN step. fn is
// called from one goroutine at a time.
func (e *Engine) ForEach(ctx context.Context, fn func(engine.Key, []byte) error) error {
	if e.closed.Load() {
		return errClosed
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var fnErr error
	call := func(k engine.Key, v []byte) error {
		mu.Lock()
		defer mu.Unlock()
		if fnErr != nil {
			return fnErr
		}
		if fnErr = fn(k, v); fnErr != nil {
			cancel()
		}
		return fnErr
	}
	var err error
	if e.cluster != nil {
		err = e.cluster.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return e.forEachOn(ctx, c, call)
		})
	} else {
		err = e.forEachOn(ctx, e.single, call)
	}
	if fnErr != nil {
		return fnErr
	}
	return e.check(err)
}

func (e *Engine) forEachOn(ctx context.Context, c *redis.Client, call func(engine.Key, []byte) error) error {
	addr := c.Options().Addr
	var cursor uint64
	for {
		keys, next, err := c.ScanType(ctx, cursor, e.lay.recordPattern(), scanCount, "string").Result()
		if err != nil {
			return nodeError(addr, err)
		}
		if len(keys) > 0 {
			// The GETs are routed by key like Get's, not sent to the node
			// the SCAN step ran on: a node importing a slot lists the keys
			// it received but serves them only through the slot's master
			// (ASK), and a key may have migrated since the SCAN step.
			gets, err := e.each(ctx, keys, func(p redis.Pipeliner, i int) redis.Cmder { return p.Get(ctx, keys[i]) }, false)
			if err != nil {
				return err
			}
			for i, g := range gets {
				raw, err := g.(*redis.StringCmd).Result()
				if errors.Is(err, redis.Nil) {
					continue // expired or deleted since the SCAN step
				}
				k, ok := keyOf(keys[i])
				if !ok {
					continue
				}
				s, err := decode(keys[i], raw)
				if err != nil {
					return err
				}
				if err := call(k, s.value); err != nil {
					return err
				}
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}
