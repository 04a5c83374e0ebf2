package sozu

import (
	"context"

	"github.com/utxostore/utxostore/engine"
)

// Checkpoint implements engine.Engine: the block boundary. Everything
// acknowledged so far becomes durable by fsyncing the shards' logs, so a
// block costs in proportion to what it changed. When the logs hold more
// than Options.CheckpointLogBytes (the replay a crash would cost), it also
// takes a page checkpoint, which writes only the buckets changed since the
// previous one. height is not used by the table (see SetHeight).
func (e *Engine) Checkpoint(ctx context.Context, height uint32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.barrier.Lock()
	defer e.barrier.Unlock()
	if e.closed {
		return engine.ErrClosed
	}
	_ = height
	sizes := make([]int64, len(e.shards))
	reqs := make([]*request, len(e.shards))
	for i, s := range e.shards {
		reqs[i] = s.start(func(s *shard) error {
			if err := s.syncLog(); err != nil {
				return err
			}
			sizes[i] = s.log.size
			return nil
		})
	}
	var logBytes int64
	for i, r := range reqs {
		if err := r.wait(); err != nil {
			return err
		}
		logBytes += sizes[i]
	}
	if logBytes < int64(e.opts.CheckpointLogBytes) {
		return nil
	}
	return e.checkpoint()
}

// syncLog makes the shard's log durable. Under SyncAlways every answered
// write already is, and what is not (lazy SetHeight records) need not be.
func (s *shard) syncLog() error {
	if err := s.commit(); err != nil {
		return err
	}
	if s.opts.Sync == engine.SyncAlways {
		return nil
	}
	if err := s.log.sync(); err != nil {
		return s.fail(err)
	}
	return nil
}
