package workload

import (
	"math/bits"

	"github.com/btcsuite/btcd/wire"
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
// defined over that order. A Fenwick tree counts the live entries.
type liveSet struct {
	entries []liveOut
	dead    []bool
	tree    []int32 // 1-based Fenwick tree over entries
	alive   int
}

func (s *liveSet) add(o liveOut) {
	if len(s.entries)+1 >= len(s.tree) {
		s.grow()
	}
	s.entries = append(s.entries, o)
	s.dead = append(s.dead, false)
	s.bump(len(s.entries), 1)
	s.alive++
}

// grow doubles the tree and rebuilds it from the live flags in O(n).
func (s *liveSet) grow() {
	size := max(1024, 2*len(s.tree))
	s.tree = make([]int32, size)
	for i := range s.entries {
		if !s.dead[i] {
			s.tree[i+1]++
		}
	}
	for i := 1; i < size; i++ {
		if j := i + i&-i; j < size {
			s.tree[j] += s.tree[i]
		}
	}
}

func (s *liveSet) bump(i int, d int32) {
	for ; i < len(s.tree); i += i & -i {
		s.tree[i] += d
	}
}

func (s *liveSet) remove(idx int) liveOut {
	s.dead[idx] = true
	s.bump(idx+1, -1)
	s.alive--
	return s.entries[idx]
}

// kth returns the index of the k-th live entry, oldest first, k from 1.
func (s *liveSet) kth(k int) int {
	pos := 0
	for step := 1 << (bits.Len(uint(len(s.tree))) - 1); step > 0; step >>= 1 {
		if next := pos + step; next < len(s.tree) && int(s.tree[next]) < k {
			pos = next
			k -= int(s.tree[next])
		}
	}
	return pos // the entry at 1-based pos+1
}

// newest returns the index of the live entry of age rank r (0: the newest).
func (s *liveSet) newest(r int) int { return s.kth(s.alive - r) }
