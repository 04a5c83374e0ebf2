// Package memory is the in-memory engine: the reference every other engine is
// compared against in differential tests, and the store for tests and demos.
// Nothing survives Close.
package memory

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/internal/termindex"
)

// entry is one record, with its expiry as unix nanoseconds so that it holds
// a single pointer (its value).
type entry struct {
	// value is never nil for a stored record: an empty value is a record.
	// Its buffer is the engine's own and is rewritten in place by a later
	// Put of the key, which is safe because Get hands out copies and
	// Update and ForEach only lend it for the duration of a call.
	value   []byte
	terms   engine.Terms
	expires int64 // unix nanoseconds; zero: never
}

// Engine keeps every record in one slice of entries, found through a
// pointer-free map from key to slot, all guarded by one mutex. An update
// looks its key up once and then changes the entry in place.
type Engine struct {
	mu     sync.Mutex
	closed bool
	// slots maps each stored key to its entry in entries. Neither it nor
	// the index maps hold pointers, so the collector never scans them.
	slots   map[engine.Key]uint32
	entries []entry
	// free lists the slots of removed records, for reuse by new ones.
	free []uint32
	// indexed holds the keys with a non-zero term, so scans do not visit
	// every record.
	indexed *termindex.Indexes
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
		slots:   make(map[engine.Key]uint32),
		indexed: termindex.New(),
		meta:    make(map[string][]byte),
	}
	return e
}

// Name implements engine.Engine.
func (e *Engine) Name() string { return "memory" }

// Get implements engine.Engine. The values are copies, all carved from one
// allocation.
func (e *Engine) Get(_ context.Context, keys []engine.Key) ([][]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, engine.ErrClosed
	}
	values := make([][]byte, len(keys))
	size := 0
	for i, k := range keys {
		if r := e.lookup(k); r != nil {
			values[i] = r.value // replaced by a copy below
			size += len(r.value)
		}
	}
	buf := make([]byte, 0, size)
	for i, v := range values {
		if v != nil {
			start := len(buf)
			buf = append(buf, v...)
			// Capped, so appending to one value never writes into the next.
			values[i] = buf[start:len(buf):len(buf)]
		}
	}
	return values, nil
}

// Update implements engine.Engine. A batch of many distinct keys (a
// block's spends, or its transactions set mined) runs its functions on
// every processor, as Sozu runs a batch's shards, and then applies their
// mutations in batch order; a small batch, or one that names a key twice,
// runs in order on the caller, each update seeing the one before.
func (e *Engine) Update(_ context.Context, updates []engine.Update) ([]error, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, engine.ErrClosed
	}
	errs := make([]error, len(updates))
	if workers := min(runtime.GOMAXPROCS(0), len(updates)/concurrentMin); workers > 1 && distinctKeys(updates) {
		e.updateConcurrently(updates, errs, workers)
		return errs, nil
	}
	for i, u := range updates {
		slot, existed := e.slots[u.Key]
		m, err := u.Fn(e.current(slot, existed))
		if err != nil {
			errs[i] = err
			continue
		}
		e.mutate(u.Key, slot, existed, m)
	}
	return errs, nil
}

// concurrentMin is the fewest updates Update gives each goroutine: below
// it, starting one costs more than the functions it would run.
const concurrentMin = 64

// updateConcurrently runs the functions of updates, whose keys are
// distinct, on workers goroutines, each a contiguous part of the batch,
// and then applies their mutations in batch order. The functions only read
// the engine (the map and the records they are lent), so they may run
// together; e.mu is held throughout.
func (e *Engine) updateConcurrently(updates []engine.Update, errs []error, workers int) {
	type outcome struct {
		slot     uint32
		existed  bool
		mutation engine.Mutation
	}
	outcomes := make([]outcome, len(updates))
	run := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			o := &outcomes[i]
			o.slot, o.existed = e.slots[updates[i].Key]
			o.mutation, errs[i] = updates[i].Fn(e.current(o.slot, o.existed))
		}
	}
	var wg sync.WaitGroup
	part := (len(updates) + workers - 1) / workers
	for lo := part; lo < len(updates); lo += part {
		wg.Go(func() { run(lo, min(lo+part, len(updates))) })
	}
	run(0, part)
	wg.Wait()
	for i, o := range outcomes {
		if errs[i] == nil {
			e.mutate(updates[i].Key, o.slot, o.existed, o.mutation)
		}
	}
}

// distinctKeys reports whether no key appears twice in updates.
func distinctKeys(updates []engine.Update) bool {
	seen := make(map[engine.Key]struct{}, len(updates))
	for i := range updates {
		if _, dup := seen[updates[i].Key]; dup {
			return false
		}
		seen[updates[i].Key] = struct{}{}
	}
	return true
}

// current is the record an update of the key in slot is lent: its stored
// bytes, nil when it holds none or its time to live has passed.
func (e *Engine) current(slot uint32, existed bool) []byte {
	if existed && e.live(&e.entries[slot]) {
		return e.entries[slot].value
	}
	return nil
}

// mutate applies an update's mutation to key k, found in slot if it
// existed.
func (e *Engine) mutate(k engine.Key, slot uint32, existed bool, m engine.Mutation) {
	switch {
	case m.Action == engine.Put && existed:
		e.overwrite(k, slot, m.Value, m.Terms, 0)
	case m.Action == engine.Put:
		e.insert(k, m.Value, m.Terms, 0)
	case m.Action == engine.Remove && existed:
		e.removeSlot(k, slot)
	}
}

// CreateOnly implements engine.Engine.
func (e *Engine) CreateOnly(_ context.Context, key engine.Key, value []byte, ttl time.Duration) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return engine.ErrClosed
	}
	var expires int64
	if ttl > 0 {
		expires = e.now().Add(ttl).UnixNano()
	}
	slot, existed := e.slots[key]
	switch {
	case existed && e.live(&e.entries[slot]):
		return engine.ErrExists
	case existed:
		e.overwrite(key, slot, value, engine.Terms{}, expires)
	default:
		e.insert(key, value, engine.Terms{}, expires)
	}
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
		if slot, ok := e.slots[k]; ok {
			e.removeSlot(k, slot)
		}
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
	for k, term := range e.indexed.Of(idx) {
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
	for k, slot := range e.slots {
		r := &e.entries[slot]
		if !e.live(r) {
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
	e.slots, e.entries, e.free = nil, nil, nil
	return nil
}

// live reports whether r's time to live, if it has one, has not passed. The
// clock is read only for records that have one (lock records), which are
// few.
func (e *Engine) live(r *entry) bool {
	return r.expires == 0 || e.now().UnixNano() < r.expires
}

// lookup returns k's live entry, or nil.
func (e *Engine) lookup(k engine.Key) *entry {
	slot, ok := e.slots[k]
	if !ok || !e.live(&e.entries[slot]) {
		return nil
	}
	return &e.entries[slot]
}

// insert stores a record under k, which holds none.
func (e *Engine) insert(k engine.Key, value []byte, terms engine.Terms, expires int64) {
	var slot uint32
	if n := len(e.free); n > 0 {
		slot, e.free = e.free[n-1], e.free[:n-1]
	} else {
		slot = uint32(len(e.entries))
		e.entries = append(e.entries, entry{})
	}
	e.slots[k] = slot
	e.entries[slot] = entry{value: own(value), terms: terms, expires: expires}
	e.indexed.Set(k, engine.Terms{}, terms)
}

// overwrite replaces the record in k's slot, reusing its buffer when the
// new value fits. value may share that buffer (a function may return part
// of the bytes it was lent); append copies as memmove does.
func (e *Engine) overwrite(k engine.Key, slot uint32, value []byte, terms engine.Terms, expires int64) {
	r := &e.entries[slot]
	e.indexed.Set(k, r.terms, terms)
	r.value = append(r.value[:0], value...)
	r.terms, r.expires = terms, expires
}

// removeSlot drops the record in k's slot and frees the slot.
func (e *Engine) removeSlot(k engine.Key, slot uint32) {
	e.indexed.Drop(k)
	delete(e.slots, k)
	e.entries[slot] = entry{} // lets the collector take the value
	e.free = append(e.free, slot)
}

// own returns a copy of a value for the engine to keep. Its capacity is
// rounded up to the allocator's size class, as append does, so a later Put
// of a slightly longer value (a record that gained a field) still fits.
// Never nil: an empty value is a record, nil means absent.
func own(value []byte) []byte {
	if b := append([]byte(nil), value...); b != nil {
		return b
	}
	return []byte{}
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}
