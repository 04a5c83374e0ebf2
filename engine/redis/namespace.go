package redis

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/utxostore/utxostore/engine"
)

// NoNamespaceError is a read-only Open's refusal of a namespace that was
// never made: it holds no store.
type NoNamespaceError struct {
	Namespace string
}

func (e *NoNamespaceError) Error() string {
	return fmt.Sprintf("redis: namespace %q holds no store (it has no layout key %q)", e.Namespace, configKey(e.Namespace))
}

// openLayout reads the namespace's bucket count, fixing it on first use
// (not read-only: a namespace never made is refused then). The count
// decides where every record lives, so it can never change for a
// namespace; a different Options.Buckets for an existing one is refused.
func (e *Engine) openLayout(ctx context.Context) error {
	key := configKey(e.opt.Namespace)
	want := e.opt.Buckets
	if want == 0 {
		want = defaultBuckets
	}
	if !e.opt.ReadOnly {
		made, err := e.client.SetNX(ctx, key, fmt.Sprintf("v1 buckets=%d", want), 0).Result()
		if err != nil {
			return fmt.Errorf("redis: namespace %q: %w", e.opt.Namespace, err)
		}
		e.made = made
	}
	s, err := e.client.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) && e.opt.ReadOnly {
		return &NoNamespaceError{Namespace: e.opt.Namespace}
	}
	if err != nil {
		return fmt.Errorf("redis: namespace %q: %w", e.opt.Namespace, err)
	}
	var got int
	if _, err := fmt.Sscanf(s, "v1 buckets=%d", &got); err != nil || got < 1 || got > slots || got&(got-1) != 0 {
		return fmt.Errorf("redis: namespace %q: unknown layout %q", e.opt.Namespace, s)
	}
	if e.opt.Buckets != 0 && e.opt.Buckets != got {
		return fmt.Errorf("redis: namespace %q was made with %d buckets, not %d", e.opt.Namespace, got, e.opt.Buckets)
	}
	e.lay = newLayout(e.opt.Namespace, got)
	return nil
}

// MadeNamespace reports whether this Open made the namespace, which held
// no key of a store before: a command that fails before it wrote anything
// of its own may Drop it again.
func (e *Engine) MadeNamespace() bool { return e.made }

// Drop removes every key of the namespace opt.Namespace from the servers
// opt.Addrs name: its records, index sets, markers, metadata and layout.
// It is for scratch stores (a benchmark's, a test's): a store open on the
// namespace elsewhere loses its data. A namespace never made is no error.
func Drop(ctx context.Context, opt Options) error {
	opt, err := opt.withDefaults()
	if err != nil {
		return err
	}
	if opt.ReadOnly {
		return engine.ErrReadOnly
	}
	e := &Engine{opt: opt}
	if err := e.connect(ctx); err != nil {
		return err
	}
	defer e.Close()
	// The namespace holds no brace or glob character, so no other
	// namespace's keys begin with "<namespace>:{".
	pattern := opt.Namespace + ":{*"
	drop := func(ctx context.Context, c *redis.Client) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, pattern, scanCount).Result()
			if err != nil {
				return nodeError(c.Options().Addr, err)
			}
			// Routed like every write, not sent to the node the SCAN step
			// ran on: a key may be migrating.
			if _, err := e.each(ctx, keys, func(p redis.Pipeliner, i int) redis.Cmder { return p.Unlink(ctx, keys[i]) }, false); err != nil {
				return fmt.Errorf("redis: dropping namespace %q: %w", opt.Namespace, err)
			}
			if next == 0 {
				return nil
			}
			cursor = next
		}
	}
	if e.cluster != nil {
		return e.cluster.ForEachMaster(ctx, drop)
	}
	return drop(ctx, e.single)
}
