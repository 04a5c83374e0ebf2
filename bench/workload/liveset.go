package workload

import (
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/internal/agerank"
)

// liveOut is one spendable output the generator knows about.
type liveOut struct {
	op     wire.OutPoint
	value  int64
	height uint32 // the height of the block that created it
}

// liveSet keeps the spendable outputs in the order they became spendable
// (creation, or maturity for coinbases), so that "the output of age rank r"
// (r-th newest) can be found in O(log n): the spend-age distribution is
// defined over that order.
type liveSet struct {
	entries []liveOut
	ages    agerank.Set // slot i is entries[i]
}

func (s *liveSet) add(o liveOut) {
	s.entries = append(s.entries, o)
	s.ages.Add()
}

func (s *liveSet) remove(idx int) liveOut {
	s.ages.Remove(idx)
	return s.entries[idx]
}

func (s *liveSet) alive() int { return s.ages.Alive() }

// kth returns the index of the k-th live entry, oldest first, k from 1.
func (s *liveSet) kth(k int) int { return s.ages.Kth(k) }

// newest returns the index of the live entry of age rank r (0: the newest).
func (s *liveSet) newest(r int) int { return s.ages.Newest(r) }
