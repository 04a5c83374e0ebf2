package pebble

import (
	"context"
	"encoding/binary"
	"errors"

	pebbledb "github.com/cockroachdb/pebble"

	"github.com/utxostore/utxostore/engine"
)

// load reads the stored record of k, expired or not; nil when there is
// none. The value is the caller's own copy.
func (e *Engine) load(k engine.Key) (*record, error) {
	v, closer, err := e.db.Get(recordKey(k))
	if errors.Is(err, pebbledb.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	r, err := decodeRecord(k, v)
	if err != nil {
		return nil, err
	}
	r.value = clone(r.value)
	return r, nil
}

// Get implements engine.Engine. Reads take no lock: pebble gives each one a
// consistent view of the latest applied batch.
func (e *Engine) Get(_ context.Context, keys []engine.Key) ([][]byte, error) {
	if err := e.enter(); err != nil {
		return nil, err
	}
	defer e.leave()
	now := e.now().UnixNano()
	values := make([][]byte, len(keys))
	for i, k := range keys {
		r, err := e.load(k)
		if err != nil {
			return nil, err
		}
		if r.live(now) {
			values[i] = r.value
		}
	}
	return values, nil
}

// Scan implements engine.Engine as one range iteration over the index.
func (e *Engine) Scan(_ context.Context, idx engine.Index, lo, hi uint32, fn func(engine.Key, uint32) error) error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.leave()
	if lo > hi {
		return nil
	}
	lower, upper := indexBounds(idx, lo, hi)
	return e.iterate(lower, upper, func(key, _ []byte) error {
		var k engine.Key
		copy(k[:], key[6:])
		return fn(k, binary.BigEndian.Uint32(key[2:6]))
	})
}

// ForEach implements engine.Engine; records whose time to live has passed
// are skipped.
func (e *Engine) ForEach(_ context.Context, fn func(engine.Key, []byte) error) error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.leave()
	now := e.now().UnixNano()
	lower, upper := prefixBounds(prefixRecord)
	return e.iterate(lower, upper, func(key, value []byte) error {
		var k engine.Key
		copy(k[:], key[1:])
		r, err := decodeRecord(k, value)
		if err != nil {
			return err
		}
		if !r.live(now) {
			return nil
		}
		return fn(k, r.value)
	})
}

// iterate calls fn for every entry in [lower, upper); key and value are only
// valid during the call.
func (e *Engine) iterate(lower, upper []byte, fn func(key, value []byte) error) error {
	it, err := e.db.NewIter(&pebbledb.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err == nil {
			err = fn(it.Key(), v)
		}
		if err != nil {
			it.Close()
			return err
		}
	}
	return it.Close()
}

// GetMeta implements engine.Engine.
func (e *Engine) GetMeta(_ context.Context, name string) ([]byte, error) {
	if err := e.enter(); err != nil {
		return nil, err
	}
	defer e.leave()
	v, closer, err := e.db.Get(metaKey(name))
	if errors.Is(err, pebbledb.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return clone(v), nil
}

func clone(b []byte) []byte {
	return append(make([]byte, 0, len(b)), b...)
}
