package sozu

import (
	"context"

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
	if e.log.written() < int64(e.opts.CheckpointLogBytes) {
		return nil
	}
	return e.checkpoint()
}
