package redis

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Checkpoint implements engine.Engine. With Wait > 0 it writes a marker on
// every master holding part of the namespace and WAITs for Wait replicas to
// acknowledge it on the same connection. A replica's acknowledgement covers
// a master's whole replication stream up to that point, so it covers every
// earlier write of every client on that master, not only the marker's. With
// Wait = 0 there is nothing to wait for: writes are as durable as the
// masters' AOF policy makes them when they are acknowledged.
func (e *Engine) Checkpoint(ctx context.Context, height uint32) error {
	if e.closed.Load() {
		return errClosed
	}
	if e.opt.Wait == 0 {
		return nil
	}
	// One marker key per master: route every bucket's marker, keep the first
	// per master. Bucket 0 holds the metadata, so its master is included.
	seen := make(map[*redis.Client]bool)
	var keys []string
	for b := 0; b < e.lay.buckets; b++ {
		k := e.lay.checkpoint(b)
		c, err := e.masterFor(ctx, k)
		if err != nil {
			return err
		}
		if !seen[c] {
			seen[c] = true
			keys = append(keys, k)
		}
	}
	h := strconv.FormatUint(uint64(height), 10)
	_, err := e.each(ctx, keys, func(p redis.Pipeliner, i int) redis.Cmder { return p.Set(ctx, keys[i], h, 0) }, true)
	return err
}
