package sozu

import (
	"context"
	"testing"
	"time"

	"github.com/utxostore/utxostore/engine"
)

// abandon drops the engine the way a killed process would: no checkpoint,
// no flush of dirty buckets; only what the log already holds survives.
func (e *Engine) abandon() {
	e.barrier.Lock()
	defer e.barrier.Unlock()
	e.closed = true
	for _, s := range e.shards {
		s.do(func(*shard) error { return nil }) // let in-flight commits finish
		close(s.inbox)
	}
	e.closeFiles()
}

// restarting wraps an engine and, every few calls, checkpoints it, closes
// and reopens it, or abandons it as a crash would and reopens it, so the
// differential test checks recovery against the reference all along.
type restarting struct {
	engine.Engine
	t     testing.TB
	dir   string
	opts  Options
	calls int
}

func (r *restarting) tick() {
	r.calls++
	if r.calls%97 != 0 {
		return
	}
	e := r.Engine.(*Engine)
	switch (r.calls / 97) % 3 {
	case 0:
		if err := e.Checkpoint(context.Background(), 0); err != nil {
			r.t.Fatalf("checkpoint: %v", err)
		}
		return
	case 1:
		if err := e.Close(); err != nil {
			r.t.Fatalf("close: %v", err)
		}
	case 2:
		// A crash loses nothing up to the last block boundary: under
		// SyncBlock that is where the comparison with the reference must
		// start, so the crash comes right after one.
		if r.opts.Sync == engine.SyncBlock {
			if err := e.Checkpoint(context.Background(), 0); err != nil {
				r.t.Fatalf("checkpoint: %v", err)
			}
		}
		e.abandon()
	}
	r.Engine = openFor(r.t, r.dir, r.opts)
}

func (r *restarting) Update(ctx context.Context, u []engine.Update) ([]error, error) {
	r.tick()
	return r.Engine.Update(ctx, u)
}

func (r *restarting) CreateOnly(ctx context.Context, k engine.Key, v []byte, ttl time.Duration) error {
	r.tick()
	return r.Engine.CreateOnly(ctx, k, v, ttl)
}

func (r *restarting) Delete(ctx context.Context, keys []engine.Key) error {
	r.tick()
	return r.Engine.Delete(ctx, keys)
}
