// Package memory is the in-memory engine: the reference every other engine is
// compared against in differential tests, and the store for tests and demos.
// Nothing survives Close.
package memory

import (
	"context"
	"sync"
	"time"

	"github.com/utxostore/utxostore/engine"
)

// entry is one record, held in the map by value and with its expiry as
// unix nanoseconds, so that a record costs the collector one pointer (its
// value) rather than three.
type entry struct {
	value   []byte
	terms   engine.Terms
	expires int64 // unix nanoseconds; zero: never
}

func (e entry) live(now time.Time) bool {
	return e.value != nil && (e.expires == 0 || now.UnixNano() < e.expires)
}

// Engine keeps every record in a Go map guarded by one mutex.
type Engine struct {
	mu      sync.Mutex
	closed  bool
	records map[engine.Key]entry
	// indexed holds, per secondary index, the keys with a non-zero term, so
	// scans do not visit every record.
	indexed map[engine.Index]map[engine.Key]uint32
	meta    map[string][]byte
	// now is the clock that decides whether a record's time to live has
	// passed.
	now func() time.Time
}

var _ engine.Engine = (*Engine)(nil)

// New returns an empty engine on the wall clock.
func New() *Engine { return NewWithClock(time.Now) }

// NewWithClock returns an empty engine whose records time out by now (tests
// pass a clock they advance).
func NewWithClock(now func() time.Time) *Engine {
	e := &Engine{
		now:     now,
		records: make(map[engine.Key]entry),
		indexed: make(map[engine.Index]map[engine.Key]uint32),
		meta:    make(map[string][]byte),
	}
	for _, idx := range engine.Indexes {
		e.indexed[idx] = make(map[engine.Key]uint32)
	}
	return e
}

// Name implements engine.Engine.
func (e *Engine) Name() string { return "memory" }

// Get implements engine.Engine.
func (e *Engine) Get(_ context.Context, keys []engine.Key) ([][]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, engine.ErrClosed
	}
	now := e.now()
	values := make([][]byte, len(keys))
	for i, k := range keys {
		if r := e.records[k]; r.live(now) {
			values[i] = append([]byte{}, r.value...)
		}
	}
	return values, nil
}

// Update implements engine.Engine.
func (e *Engine) Update(_ context.Context, updates []engine.Update) ([]error, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, engine.ErrClosed
	}
	now := e.now()
	errs := make([]error, len(updates))
	for i, u := range updates {
		// The stored bytes are lent to the function (engine.UpdateFunc).
		var current []byte
		old, existed := e.records[u.Key]
		if old.live(now) {
			current = old.value
		}
		m, err := u.Fn(current)
		if err != nil {
			errs[i] = err
			continue
		}
		switch m.Action {
		case engine.Put:
			// Never nil: an empty value is a record, nil means absent.
			e.replace(u.Key, old, existed, entry{value: append([]byte{}, m.Value...), terms: m.Terms})
		case engine.Remove:
			e.remove(u.Key)
		}
	}
	return errs, nil
}

// CreateOnly implements engine.Engine.
func (e *Engine) CreateOnly(_ context.Context, key engine.Key, value []byte, ttl time.Duration) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return engine.ErrClosed
	}
	now := e.now()
	old, existed := e.records[key]
	if old.live(now) {
		return engine.ErrExists
	}
	r := entry{value: append([]byte{}, value...)}
	if ttl > 0 {
		r.expires = now.Add(ttl).UnixNano()
	}
	e.replace(key, old, existed, r)
	return nil
}

// Delete implements engine.Engine.
func (e *Engine) Delete(_ context.Context, keys []engine.Key) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return engine.ErrClosed
	}
	for _, k := range keys {
		e.remove(k)
	}
	return nil
}

// Scan implements engine.Engine.
func (e *Engine) Scan(_ context.Context, idx engine.Index, lo, hi uint32, fn func(engine.Key, uint32) error) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return engine.ErrClosed
	}
	type hit struct {
		key  engine.Key
		term uint32
	}
	var hits []hit
	for k, term := range e.indexed[idx] {
		if term >= lo && term <= hi {
			hits = append(hits, hit{k, term})
		}
	}
	e.mu.Unlock()
	for _, h := range hits {
		if err := fn(h.key, h.term); err != nil {
			return err
		}
	}
	return nil
}

// ForEach implements engine.Engine.
func (e *Engine) ForEach(_ context.Context, fn func(engine.Key, []byte) error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return engine.ErrClosed
	}
	now := e.now()
	for k, r := range e.records {
		if !r.live(now) {
			continue
		}
		if err := fn(k, r.value); err != nil {
			return err
		}
	}
	return nil
}

// GetMeta implements engine.Engine.
func (e *Engine) GetMeta(_ context.Context, name string) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, engine.ErrClosed
	}
	return clone(e.meta[name]), nil
}

// PutMeta implements engine.Engine.
func (e *Engine) PutMeta(_ context.Context, name string, value []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return engine.ErrClosed
	}
	e.meta[name] = clone(value)
	return nil
}

// Checkpoint implements engine.Engine; memory has nothing to make durable.
func (e *Engine) Checkpoint(context.Context, uint32) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return engine.ErrClosed
	}
	return nil
}

// Close implements engine.Engine.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return engine.ErrClosed
	}
	e.closed = true
	e.records = nil
	return nil
}

// replace stores r under k, where old is what k held (existed: anything,
// live or not), which the caller has already looked up.
func (e *Engine) replace(k engine.Key, old entry, existed bool, r entry) {
	e.records[k] = r
	if existed && old.terms == r.terms {
		return // the indexes already hold these terms
	}
	for _, idx := range engine.Indexes {
		if term := idx.Term(r.terms); term != 0 {
			e.indexed[idx][k] = term
		} else {
			delete(e.indexed[idx], k)
		}
	}
}

func (e *Engine) remove(k engine.Key) {
	delete(e.records, k)
	for _, idx := range engine.Indexes {
		delete(e.indexed[idx], k)
	}
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}
