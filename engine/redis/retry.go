package redis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// retrier paces the retries of one operation through redirects and
// failovers: short jittered sleeps growing to 200 ms, a fresh view of the
// cluster before each, and a bounded total time.
type retrier struct {
	e        *Engine
	deadline time.Time
	attempt  int
}

func (e *Engine) newRetrier() *retrier {
	return &retrier{e: e, deadline: time.Now().Add(e.opt.RetryTimeout)}
}

// wait sleeps before the next attempt after a node refused or failed, with
// a fresh view of the cluster, or returns cause when the retry time is
// spent or ctx is done.
func (r *retrier) wait(ctx context.Context, cause error) error { return r.pause(ctx, cause, true) }

// conflict is wait after a lost CAS race: the cluster is fine, only the
// record moved on, so it keeps the routing table.
func (r *retrier) conflict(ctx context.Context, cause error) error { return r.pause(ctx, cause, false) }

func (r *retrier) pause(ctx context.Context, cause error, reload bool) error {
	if r.e.closed.Load() {
		return errClosed
	}
	if time.Now().After(r.deadline) {
		return fmt.Errorf("redis: gave up after %v of retries: %w", r.e.opt.RetryTimeout, cause)
	}
	r.attempt++
	if reload && r.e.cluster != nil {
		r.e.cluster.ReloadState(ctx)
	}
	d := time.Duration(1<<min(r.attempt, 8)) * time.Millisecond
	d = min(d, 200*time.Millisecond)
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
