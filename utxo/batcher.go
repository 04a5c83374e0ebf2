package utxo

import (
	"context"
	"sync"
	"time"

	"github.com/utxostore/utxostore/engine"
)

// Defaults of the batcher (Options.BatchOps, Options.BatchWait), measured
// with `utxostore bench --sync always --clients 64` (BENCHMARKS.md): a
// wait far below an fsync's cost, and a batch big enough for 64 callers'
// spends and creates.
const (
	DefaultBatchOps  = 4096
	DefaultBatchWait = 200 * time.Microsecond
)

// batcher merges the engine writes of concurrent callers into one engine
// batch: the first caller to arrive opens a batch and hands the whole batch
// to the engine, sharing the outcome, as soon as it holds BatchOps updates,
// BatchWait after it opened, or when no other batch is at the engine (a
// lone caller, an import say, never waits). Under engine.SyncAlways one
// engine batch is one synced log write, so callers that arrive while a
// batch is being synced share the next fsync (and, on Redis, one round trip
// per master) instead of queueing for their own. Each update still applies
// atomically for its key, in arrival order, so merging changes no outcome.
type batcher struct {
	eng    engine.Engine
	maxOps int
	wait   time.Duration

	mu       sync.Mutex
	open     *batch        // collecting updates; nil when none is
	inFlight int           // batches at the engine
	idle     chan struct{} // closed when inFlight drops to zero
}

// batch is one merged engine batch.
type batch struct {
	updates []engine.Update
	full    chan struct{} // closed when the batch reaches maxOps
	done    chan struct{} // closed once the engine has answered
	errs    []error
	err     error
}

// update applies updates as part of the open batch and returns their
// outcomes (see engine.Engine.Update).
func (b *batcher) update(ctx context.Context, updates []engine.Update) ([]error, error) {
	b.mu.Lock()
	bt, leader := b.open, false
	if bt == nil {
		bt = &batch{full: make(chan struct{}), done: make(chan struct{})}
		b.open, leader = bt, true
	}
	first := len(bt.updates)
	bt.updates = append(bt.updates, updates...)
	if len(bt.updates) >= b.maxOps && first < b.maxOps {
		close(bt.full)
	}
	b.mu.Unlock()
	if leader {
		b.mu.Lock()
		idle := b.idle
		b.mu.Unlock()
		if idle != nil {
			timer := time.NewTimer(b.wait)
			select {
			case <-timer.C:
			case <-bt.full:
			case <-idle:
			}
			timer.Stop()
		}
		b.mu.Lock()
		b.open = nil // closed: later callers open the next batch
		if b.inFlight++; b.inFlight == 1 {
			b.idle = make(chan struct{})
		}
		b.mu.Unlock()
		// The batch holds other callers' updates: the leader's
		// cancellation must not fail theirs.
		bt.errs, bt.err = b.eng.Update(context.WithoutCancel(ctx), bt.updates)
		b.mu.Lock()
		if b.inFlight--; b.inFlight == 0 {
			close(b.idle)
			b.idle = nil
		}
		b.mu.Unlock()
		close(bt.done)
	} else {
		// Not cancellable: the updates are in the batch, and only the
		// engine's answer says whether they were applied.
		<-bt.done
	}
	if bt.err != nil {
		return nil, bt.err
	}
	return bt.errs[first : first+len(updates)], nil
}

// update is the store's one door to engine.Engine.Update: through the
// batcher when Options.BatchWait enables it. Writes that defer their sync
// (a block's, engine.DeferSync) go straight to the engine: they have no
// fsync to share, and a batch they led would defer its other callers'
// syncs too.
func (db *DB) update(ctx context.Context, updates []engine.Update) ([]error, error) {
	if db.batcher == nil || engine.SyncDeferred(ctx) {
		return db.eng.Update(ctx, updates)
	}
	return db.batcher.update(ctx, updates)
}
