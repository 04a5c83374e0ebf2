package server

import (
	"context"
	"sync"

	"github.com/utxostore/utxostore/utxo"
)

// cachedSummary is the daemon's backend as both its APIs read it: Summary
// walks every record, so it is computed again only after the store
// changed, not once per request (gRPC Summary, /api/status?summary=true).
// Below the cache the backend counts each walk in the metrics, so
// utxo_operations_total{op="Summary"} counts walks, not requests.
type cachedSummary struct {
	Backend
	cache summaryCache
}

// Summary implements Backend.
func (c *cachedSummary) Summary(ctx context.Context) (utxo.Summary, error) {
	return c.cache.get(ctx, c.Backend)
}

// summaryCache keeps the last Summary with the state of the store it was
// computed in, the tip and the backend's count of changes: a write through
// this process, or a new tip from another, makes the next call walk again.
type summaryCache struct {
	mu      sync.Mutex
	tip     utxo.Tip
	changes uint64
	ok      bool
	sum     utxo.Summary
}

// get returns the store's summary, from the cache when the store has not
// changed since it was computed.
func (c *summaryCache) get(ctx context.Context, b Backend) (utxo.Summary, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	changes := b.Changes() // before the walk: a write ending during it makes the next call walk again
	tip, _, err := b.Tip(ctx)
	if err != nil {
		return utxo.Summary{}, err
	}
	if c.ok && c.tip == tip && c.changes == changes {
		return c.sum, nil
	}
	sum, err := b.Summary(ctx)
	if err != nil {
		return sum, err
	}
	c.tip, c.changes, c.sum, c.ok = tip, changes, sum, true
	return sum, nil
}
