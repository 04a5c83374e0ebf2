package redis

import (
	"sync"

	"github.com/utxostore/utxostore/engine"
)

// recent remembers the stored strings this engine's Updates last read or
// wrote, by record key (not Get's: its caller owns the values it returns,
// while these are lent to UpdateFuncs, which leave them unchanged), so
// that an Update of a record it knows can send its compare-and-set at
// once instead of reading the record first: one round trip per master
// instead of two. What it remembers may be stale (another
// process, or a failover, may have changed the record since); the stamp
// the CAS compares is what makes that safe: a stale stamp fails the CAS,
// and the record is then read and computed again (see Update).
//
// It holds at most max entries in two generations: when the newer one is
// full the older one is dropped, so what is kept is what was touched last.
type recent struct {
	mu         sync.Mutex
	max        int // per generation; 0 keeps nothing
	now, older map[engine.Key]stored
}

func newRecent(records int) *recent {
	return &recent{max: records / 2, now: make(map[engine.Key]stored)}
}

func (r *recent) get(k engine.Key) (stored, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.now[k]; ok {
		return s, true
	}
	s, ok := r.older[k]
	return s, ok
}

// put remembers s as key k's stored string. s.value must not change
// afterwards: it is lent to UpdateFuncs.
func (r *recent) put(k engine.Key, s stored) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.max == 0 {
		return
	}
	if len(r.now) >= r.max {
		r.older, r.now = r.now, make(map[engine.Key]stored, r.max)
	}
	r.now[k] = s
	delete(r.older, k)
}

func (r *recent) forget(k engine.Key) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.now, k)
	delete(r.older, k)
}
