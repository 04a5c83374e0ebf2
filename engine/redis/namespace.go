package redis

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
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
		if err := e.client.SetNX(ctx, key, fmt.Sprintf("v1 buckets=%d", want), 0).Err(); err != nil {
			return fmt.Errorf("redis: namespace %q: %w", e.opt.Namespace, err)
		}
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
