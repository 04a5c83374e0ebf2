package sozu

import (
	"context"
	"runtime/metrics"

	"github.com/utxostore/utxostore/engine"
)

// Checkpoint implements engine.Engine: the block boundary. Everything
// acknowledged so far becomes durable by fsyncing the log, so a block
// costs in proportion to what it changed. When the log holds more than Options.CheckpointLogBytes (the replay a crash would cost), it also
// takes a page checkpoint, which writes only the buckets changed since the
// previous one. height is not used by the table (see SetHeight).
func (e *Engine) Checkpoint(ctx context.Context, height uint32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if e.opts.ReadOnly {
		return engine.ErrReadOnly
	}
	e.barrier.Lock()
	defer e.barrier.Unlock()
	if e.closed {
		return engine.ErrClosed
	}
	_ = height
	err := e.eachShard(func(s *shard) error {
		_, err := s.appendRecords()
		return err
	})
	if err != nil {
		return err
	}
	// Under SyncAlways only lazy requests' records may be left to sync
	// (deferred writes, SetHeight); when a durable write covered them,
	// this costs nothing.
	if err := e.log.sync(); err != nil {
		return e.fail(err)
	}
	e.warnIfOverBudget()
	if e.log.written() < int64(e.opts.CheckpointLogBytes) {
		return nil
	}
	return e.checkpoint()
}

// warnIfOverBudget logs, once per open store, that the process's live heap
// has passed three quarters of the memory budget (Options.MemoryBytes).
// Where the program set the Go memory limit to the budget (utxostore
// does), the collector from there runs at least three times as often as
// it would without a limit, and
// more as the store grows: a store that outgrew its budget slows with no
// error. The live heap is the collector's last count, so reading it costs
// next to nothing at each block.
func (e *Engine) warnIfOverBudget() {
	if e.overBudget || e.opts.Logger == nil {
		return
	}
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	if live[0].Value.Kind() != metrics.KindUint64 || live[0].Value.Uint64() <= uint64(e.opts.MemoryBytes)/4*3 {
		return
	}
	e.overBudget = true
	e.opts.Logger.Warn("sozu: the live heap has passed three quarters of the memory budget; the garbage collector now runs more often and the store slows as it grows: raise the budget (--sozu-tuning memory=BYTES)",
		"live_heap_bytes", live[0].Value.Uint64(), "memory_budget_bytes", e.opts.MemoryBytes)
}
