package utxo

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/utxostore/utxostore/engine"
)

// changeCounting is the engine as the store uses it: each call that may
// write counts one change once it has returned, so that what a reader
// caches per state of the store knows when to compute again (see Changes).
type changeCounting struct {
	engine.Engine
	changes *atomic.Uint64
}

// Unwrap returns the engine itself, for what only its own type offers
// (Sozu's Stats).
func (c changeCounting) Unwrap() engine.Engine { return c.Engine }

func (c changeCounting) Update(ctx context.Context, updates []engine.Update) ([]error, error) {
	defer c.changes.Add(1)
	return c.Engine.Update(ctx, updates)
}

func (c changeCounting) CreateOnly(ctx context.Context, key engine.Key, value []byte, ttl time.Duration) error {
	defer c.changes.Add(1)
	return c.Engine.CreateOnly(ctx, key, value, ttl)
}

func (c changeCounting) Delete(ctx context.Context, keys []engine.Key) error {
	defer c.changes.Add(1)
	return c.Engine.Delete(ctx, keys)
}

func (c changeCounting) PutMeta(ctx context.Context, name string, value []byte) error {
	defer c.changes.Add(1)
	return c.Engine.PutMeta(ctx, name, value)
}

// Changes counts the writes this DB has made to its engine since it was
// opened, whoever called for them. A value computed from the store (a
// Summary, say) after reading Changes still holds while Changes returns
// the same count: no write has ended since.
func (db *DB) Changes() uint64 { return db.changes.Load() }
