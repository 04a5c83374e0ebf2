package agerank

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSetMatchesAList drives a Set and a plain list of live slot numbers
// through the same random adds and removes (enough to grow the tree
// several times) and checks every age rank's answer against the list.
func TestSetMatchesAList(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var s Set
	var live []int // live slot numbers, oldest first
	for step := 0; step < 20_000; step++ {
		if len(live) == 0 || rng.IntN(3) > 0 {
			if got, want := s.Add(), s.Len()-1; got != want {
				t.Fatalf("Add returned %d, want %d", got, want)
			}
			live = append(live, s.Len()-1)
		} else {
			p := rng.IntN(len(live))
			s.Remove(live[p])
			s.Remove(live[p]) // a second removal changes nothing
			live = append(live[:p], live[p+1:]...)
		}
		if s.Alive() != len(live) {
			t.Fatalf("step %d: Alive %d, want %d", step, s.Alive(), len(live))
		}
		if step%97 == 0 {
			for r := range live {
				if got, want := s.Newest(r), live[len(live)-1-r]; got != want {
					t.Fatalf("step %d: Newest(%d) = %d, want %d", step, r, got, want)
				}
			}
			for k := 1; k <= len(live); k++ {
				if got := s.Kth(k); got != live[k-1] {
					t.Fatalf("step %d: Kth(%d) = %d, want %d", step, k, got, live[k-1])
				}
			}
		}
	}
}

// TestLogUniformIsLogUniform checks the distribution's quantiles over a
// million slots: P(rank < k) = log(k+1)/log(n), so the median rank is
// about √n, and ranks stay in [0, n).
func TestLogUniformIsLogUniform(t *testing.T) {
	const n = 1_000_000
	rng := rand.New(rand.NewPCG(1, 2))
	const draws = 200_000
	below := map[int]int{10: 0, 1_000: 0, 100_000: 0}
	for i := 0; i < draws; i++ {
		r := LogUniform(rng.Float64(), n)
		if r < 0 || r >= n {
			t.Fatalf("rank %d outside [0, %d)", r, n)
		}
		for k := range below {
			if r < k {
				below[k]++
			}
		}
	}
	for k, c := range below {
		want := math.Log(float64(k+1)) / math.Log(n)
		if got := float64(c) / draws; math.Abs(got-want) > 0.01 {
			t.Errorf("P(rank < %d) = %.3f, want %.3f", k, got, want)
		}
	}
	if r := LogUniform(0, n); r != 0 {
		t.Errorf("u = 0 maps to rank %d, want 0 (the newest)", r)
	}
}
