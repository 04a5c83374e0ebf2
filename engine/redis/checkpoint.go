package redis

import (
	"context"
	"fmt"
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
//
// The WAIT counts only if the marker was written on that master itself. A
// marker whose slot is migrating away and which has already left is written
// on the importing node instead (ASK), so its master got no write to wait
// behind: Checkpoint then writes that master another bucket's marker.
func (e *Engine) Checkpoint(ctx context.Context, height uint32) error {
	if err := e.writable(); err != nil {
		return err
	}
	if e.opt.Wait == 0 {
		return nil
	}
	return e.waitEveryMaster(ctx, strconv.FormatUint(uint64(height), 10))
}

// waitEveryMaster writes marker value h on every master and waits for
// Wait replicas of each (see Checkpoint). It covers every write that
// returned before it, deferred ones included.
func (e *Engine) waitEveryMaster(ctx context.Context, h string) error {
	deferred := e.deferred.Load()
	gone := make(map[string]bool) // markers that have left their master's node
	r := e.newRetrier()
	for {
		keys, err := e.checkpointMarkers(ctx, gone)
		if err != nil {
			return err
		}
		_, errs, asked := e.fanOut(ctx, keys, func(p redis.Pipeliner, i int) redis.Cmder { return p.Set(ctx, keys[i], h, 0) }, true)
		var cause error
		for i, k := range keys {
			switch classify(errs[i]) {
			case done:
				if asked[i] {
					gone[k] = true
					cause = fmt.Errorf("redis: checkpoint marker %q is on a node importing its slot, not on its master", k)
				}
			case notRun, uncertain:
				cause = errs[i]
			default:
				return e.check(errs[i])
			}
		}
		if cause == nil {
			e.coveredThrough(deferred)
			return nil
		}
		if err := r.wait(ctx, cause); err != nil {
			return e.check(err)
		}
	}
}

// checkpointMarkers returns one marker key per master: the marker of the
// first bucket it serves, passing over those known to be gone while it has
// another. Bucket 0 holds the metadata, so its master is included.
func (e *Engine) checkpointMarkers(ctx context.Context, gone map[string]bool) ([]string, error) {
	var keys []string
	of := make(map[*redis.Client]int) // master → its marker's index in keys
	for b := 0; b < e.lay.buckets; b++ {
		k := e.lay.checkpoint(b)
		c, err := e.masterFor(ctx, k)
		if err != nil {
			return nil, err
		}
		j, ok := of[c]
		switch {
		case !ok:
			of[c] = len(keys)
			keys = append(keys, k)
		case gone[keys[j]] && !gone[k]:
			keys[j] = k
		}
	}
	return keys, nil
}
