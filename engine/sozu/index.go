package sozu

import "github.com/utxostore/utxostore/engine"

// secondaryIndexes answers Scan: per index, the keys whose term is
// non-zero. They live in memory: updates change them there, the log makes
// those changes durable, and each page checkpoint stores them whole
// (derivedState) so open need not scan the buckets for them. They hold
// only records with a pending height (unmined, scheduled for deletion,
// preserved), a small fraction of a UTXO set.
type secondaryIndexes [engine.ByPreserveUntil + 1]map[engine.Key]uint32

func newSecondaryIndexes() *secondaryIndexes {
	var s secondaryIndexes
	for _, idx := range engine.Indexes {
		s[idx] = make(map[engine.Key]uint32)
	}
	return &s
}

// set changes k's terms from was (zero for a new key) to t. Only the
// indexes whose term changes are touched: most updates change none, and
// a map operation per index was a visible share of every put.
func (s *secondaryIndexes) set(k engine.Key, was, t engine.Terms) {
	for _, idx := range engine.Indexes {
		term, before := idx.Term(t), idx.Term(was)
		switch {
		case term == before:
		case term != 0:
			(*s)[idx][k] = term
		default:
			delete((*s)[idx], k)
		}
	}
}

func (s *secondaryIndexes) drop(k engine.Key) {
	for _, idx := range engine.Indexes {
		delete((*s)[idx], k)
	}
}

func (s *secondaryIndexes) entries() int {
	n := 0
	for _, idx := range engine.Indexes {
		n += len((*s)[idx])
	}
	return n
}
