package redis

import (
	lru "github.com/hashicorp/golang-lru/v2"

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
// It holds the last max records touched (least recently used go first).
type recent struct {
	records *lru.Cache[engine.Key, stored] // nil keeps nothing
}

func newRecent(records int) *recent {
	if records <= 0 {
		return &recent{}
	}
	c, err := lru.New[engine.Key, stored](records)
	if err != nil {
		panic(err) // only for a size <= 0, excluded above
	}
	return &recent{records: c}
}

func (r *recent) get(k engine.Key) (stored, bool) {
	if r.records == nil {
		return stored{}, false
	}
	return r.records.Get(k)
}

// put remembers s as key k's stored string. s.value must not change
// afterwards: it is lent to UpdateFuncs.
func (r *recent) put(k engine.Key, s stored) {
	if r.records != nil {
		r.records.Add(k, s)
	}
}

func (r *recent) forget(k engine.Key) {
	if r.records != nil {
		r.records.Remove(k)
	}
}
