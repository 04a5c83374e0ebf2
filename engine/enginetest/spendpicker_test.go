package enginetest

import (
	"math/rand/v2"
	"testing"
)

// TestLindyPickerSpendsLiveRecordsYoungFirst drives the mix's bookkeeping
// (live with swap-removal, as BenchCreateSpendMix keeps it) under
// -ages lindy: every pick must be a live record with an unspent output, and
// the picks' age ranks, counted among the live records at the time, must
// be log-uniform: half of them among the newest √n, few in the older half.
func TestLindyPickerSpendsLiveRecordsYoungFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	picker := newSpendPicker(0, true)
	var live []uint32
	var unspent []uint8
	add := func() {
		i := uint32(len(unspent))
		picker.added(i, len(live))
		live = append(live, i)
		unspent = append(unspent, uint8(1+rng.IntN(5)))
	}
	for range 100_000 {
		add()
	}
	var picks, newestRoot, olderHalf int
	for op := 0; op < 200_000; op++ {
		if rng.IntN(100) < benchCreateShare {
			add()
			continue
		}
		p, ok := picker.pick(rng, unspent)
		if !ok {
			t.Fatal("a lindy picker always picks")
		}
		i := live[p]
		if unspent[i] == 0 {
			t.Fatalf("op %d: picked record %d, which has no unspent output", op, i)
		}
		if op%50 == 0 {
			rank := 0 // live records created after i
			for _, j := range live {
				if j > i {
					rank++
				}
			}
			picks++
			if rank*rank < len(live) {
				newestRoot++
			}
			if rank > len(live)/2 {
				olderHalf++
			}
		}
		if unspent[i]--; unspent[i] == 0 {
			live[p] = live[len(live)-1]
			picker.moved(live[p], p)
			live = live[:len(live)-1]
			picker.spent(i)
		}
	}
	if picker.ages.Alive() != len(live) {
		t.Fatalf("picker counts %d live records, the mix %d", picker.ages.Alive(), len(live))
	}
	if share := float64(newestRoot) / float64(picks); share < 0.45 || share > 0.55 {
		t.Errorf("%.3f of the picks among the newest √n live records, want about half", share)
	}
	if share := float64(olderHalf) / float64(picks); share > 0.1 {
		t.Errorf("%.3f of the picks in the older half, want a thin tail", share)
	}
}
