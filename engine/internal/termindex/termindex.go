// Package termindex is the secondary index of the engines that keep theirs
// in memory (memory, sozu): per index, the keys whose term is non-zero,
// with their terms. Scan reads it; updates keep it.
package termindex

import "github.com/utxostore/utxostore/engine"

// Indexes maps, per engine.Index (its value is the position), each key to
// its non-zero term.
type Indexes [engine.ByPreserveUntil + 1]map[engine.Key]uint32

// New returns empty indexes.
func New() *Indexes {
	var s Indexes
	for _, idx := range engine.Indexes {
		s[idx] = make(map[engine.Key]uint32)
	}
	return &s
}

// Set changes k's terms from was (zero for a new key) to t. Only the
// indexes whose term changes are touched: most updates change none, and a
// map operation per index is a visible share of every put.
func (s *Indexes) Set(k engine.Key, was, t engine.Terms) {
	for _, idx := range engine.Indexes {
		term, before := idx.Term(t), idx.Term(was)
		switch {
		case term == before:
		case term != 0:
			s[idx][k] = term
		default:
			delete(s[idx], k)
		}
	}
}

// Drop removes k from every index.
func (s *Indexes) Drop(k engine.Key) {
	for _, idx := range engine.Indexes {
		delete(s[idx], k)
	}
}

// Of is idx's keys and terms; nil for an index the engine does not know.
func (s *Indexes) Of(idx engine.Index) map[engine.Key]uint32 {
	if int(idx) >= len(s) {
		return nil
	}
	return s[idx]
}

// Entries is the number of index entries, over every index.
func (s *Indexes) Entries() int {
	n := 0
	for _, idx := range engine.Indexes {
		n += len(s[idx])
	}
	return n
}
