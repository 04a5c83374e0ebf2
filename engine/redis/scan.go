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

// Scan implements engine.Engine: the index's sorted set of every bucket,
// read by one scanScript call per master (scanMaster).
func (e *Engine) Scan(ctx context.Context, idx engine.Index, lo, hi uint32, fn func(engine.Key, uint32) error) error {
	if e.closed.Load() {
		return errClosed
	}
	// The sets by the master the routing table places them on; nil
	// gathers those it places nowhere now, for the routed path to retry.
	var masters []*redis.Client
	sets := make(map[*redis.Client][]string)
	for b := 0; b < e.lay.buckets; b++ {
		k := e.lay.index(b, idx)
		c, err := e.masterFor(ctx, k)
		if err != nil {
			c = nil
		}
		if _, ok := sets[c]; !ok {
			masters = append(masters, c)
		}
		sets[c] = append(sets[c], k)
	}
	found := make([][]scanHit, len(masters))
	errs := make([]error, len(masters))
	var wg sync.WaitGroup
	for i, c := range masters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			found[i], errs[i] = e.scanMaster(ctx, c, sets[c], lo, hi)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, hits := range found {
		for _, h := range hits {
			if err := fn(h.key, h.term); err != nil {
				return err
			}
		}
	}
	return nil
}

// scanHit is one index entry a Scan found.
type scanHit struct {
	key  engine.Key
	term uint32
}

// scanScript reads the entries in [ARGV[1], ARGV[2]] of the sorted sets
// named by ARGV[3..], all on the node it runs on, and returns them as one
// flat list: member, score, member, score, ...
//
// It is what makes a Scan one command per master rather than one per
// bucket. The sets are in many slots, so they cannot be declared as KEYS
// (a multi-key command must stay in one slot); allow-cross-slot-keys lets
// the script read them anyway, and the node still refuses, with an error,
// any set whose slot it does not serve or whose migration has taken it
// elsewhere. No-writes lets it run whatever state the cluster is in.
const scanScript = `#!lua flags=no-writes,allow-cross-slot-keys
local out = {}
for i = 3, #ARGV do
  local entries = redis.call('ZRANGEBYSCORE', ARGV[i], ARGV[1], ARGV[2], 'WITHSCORES')
  for j = 1, #entries do out[#out + 1] = entries[j] end
end
return out
`

var scanSets = redis.NewScript(scanScript)

// scanMaster returns the entries in [lo, hi] of the index sets keys, which
// the routing table places on master c (nil: no table). It asks c with
// one scanScript call. When c refuses (a set's slot has moved or is being
// migrated and the set has left, a server without script flags, a
// failover), it falls back to one ZRANGEBYSCORE per set, routed and
// retried like every other read: slower, and correct wherever the sets
// are.
func (e *Engine) scanMaster(ctx context.Context, c *redis.Client, keys []string, lo, hi uint32) ([]scanHit, error) {
	from, to := strconv.FormatUint(uint64(lo), 10), strconv.FormatUint(uint64(hi), 10)
	if c != nil {
		args := make([]any, 0, 2+len(keys))
		args = append(args, from, to)
		for _, k := range keys {
			args = append(args, k)
		}
		if flat, err := scanSets.Run(ctx, c, nil, args...).StringSlice(); err == nil {
			return parseScan(flat, c.Options().Addr)
		}
	}
	rng := &redis.ZRangeBy{Min: from, Max: to}
	cmds, err := e.each(ctx, keys, func(p redis.Pipeliner, i int) redis.Cmder {
		return p.ZRangeByScoreWithScores(ctx, keys[i], rng)
	}, false)
	if err != nil {
		return nil, err
	}
	var hits []scanHit
	for i, cmd := range cmds {
		for _, z := range cmd.(*redis.ZSliceCmd).Val() {
			m, _ := z.Member.(string)
			h, err := newScanHit(m, uint64(z.Score), keys[i])
			if err != nil {
				return nil, err
			}
			hits = append(hits, h)
		}
	}
	return hits, nil
}

// parseScan reads scanScript's reply from node addr.
func parseScan(flat []string, addr string) ([]scanHit, error) {
	if len(flat)%2 != 0 {
		return nil, &engine.CorruptionError{Engine: Name, Where: "index scan on " + addr, Detail: fmt.Sprintf("reply of %d items", len(flat))}
	}
	hits := make([]scanHit, 0, len(flat)/2)
	for i := 0; i < len(flat); i += 2 {
		term, err := strconv.ParseUint(flat[i+1], 10, 32)
		if err != nil {
			return nil, &engine.CorruptionError{Engine: Name, Where: "index scan on " + addr, Detail: fmt.Sprintf("score %q", flat[i+1])}
		}
		h, err := newScanHit(flat[i], term, "index scan on "+addr)
		if err != nil {
			return nil, err
		}
		hits = append(hits, h)
	}
	return hits, nil
}

func newScanHit(member string, term uint64, where string) (scanHit, error) {
	if len(member) != engine.KeySize {
		return scanHit{}, &engine.CorruptionError{Engine: Name, Where: where, Detail: fmt.Sprintf("index member of %d bytes", len(member))}
	}
	var h scanHit
	copy(h.key[:], member)
	h.term = uint32(term)
	return h, nil
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
