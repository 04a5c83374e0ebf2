// Package agerank keeps slots numbered in the order they were added, each
// live or removed, and finds the live slot of a given age rank in
// O(log n). The benchmark workloads use it to spend outputs by age: the
// spend-age distribution is defined over this order, and LogUniform is the
// heavy-tailed (Lindy) one they draw from.
package agerank

import (
	"math"
	"math/bits"
)

// Set is the slots added so far. The zero Set is empty and ready.
type Set struct {
	dead  []bool
	tree  []int32 // 1-based Fenwick tree counting the live slots
	alive int
}

// Add appends a live slot and returns its number (0 for the first).
func (s *Set) Add() int {
	if len(s.dead)+1 >= len(s.tree) {
		s.grow()
	}
	s.dead = append(s.dead, false)
	s.bump(len(s.dead), 1)
	s.alive++
	return len(s.dead) - 1
}

// grow doubles the tree and rebuilds it from the live flags in O(n).
func (s *Set) grow() {
	size := max(1024, 2*len(s.tree))
	s.tree = make([]int32, size)
	for i, dead := range s.dead {
		if !dead {
			s.tree[i+1]++
		}
	}
	for i := 1; i < size; i++ {
		if j := i + i&-i; j < size {
			s.tree[j] += s.tree[i]
		}
	}
}

func (s *Set) bump(i int, d int32) {
	for ; i < len(s.tree); i += i & -i {
		s.tree[i] += d
	}
}

// Remove marks slot i removed; removing a removed slot does nothing.
func (s *Set) Remove(i int) {
	if s.dead[i] {
		return
	}
	s.dead[i] = true
	s.bump(i+1, -1)
	s.alive--
}

// Len is the number of slots ever added; Alive the number still live.
func (s *Set) Len() int   { return len(s.dead) }
func (s *Set) Alive() int { return s.alive }

// Kth returns the number of the k-th live slot, oldest first, k from 1 to
// Alive().
func (s *Set) Kth(k int) int {
	pos := 0
	for step := 1 << (bits.Len(uint(len(s.tree))) - 1); step > 0; step >>= 1 {
		if next := pos + step; next < len(s.tree) && int(s.tree[next]) < k {
			pos = next
			k -= int(s.tree[next])
		}
	}
	return pos // the slot at 1-based pos+1
}

// Newest returns the number of the live slot of age rank r: 0 is the
// newest, Alive()-1 the oldest.
func (s *Set) Newest(r int) int { return s.Kth(s.alive - r) }

// LogUniform maps u, uniform in [0, 1), to an age rank in [0, n) drawn
// from a log-uniform distribution: rank+1 = floor(n^u), so
// P(rank < k) = log(k+1)/log(n). Half the draws take the newest √n slots,
// and the older a slot already is, the less likely it is to be drawn next:
// the Lindy effect the Sozu table is designed around.
func LogUniform(u float64, n int) int {
	r := int(math.Pow(float64(n), u)) - 1
	return max(0, min(r, n-1))
}
