// Package latency holds the log-linear latency histogram both benchmarks
// record their calls in: `utxostore bench` (bench/driver) and the engines'
// BenchCreateSpendMix (engine/enginetest).
package latency

import (
	"math/bits"
	"time"
)

// subBits sub-buckets per power of two: 16, so a recorded value is known
// within 1/16 (about 6%) — plenty for p50/p99 of store calls, at a fixed
// 1 KiB per histogram whatever the number of samples (HDR-style: relative
// precision, constant memory).
const subBits = 4

const subCount = 1 << subBits

// Hist is a log-linear latency histogram of durations.
type Hist struct {
	counts [64 * subCount]uint64
	n      uint64
	sum    time.Duration
	max    time.Duration
}

func bucketOf(v uint64) int {
	if v < subCount {
		return int(v)
	}
	shift := bits.Len64(v) - subBits - 1
	return (shift+1)*subCount + int(v>>shift) - subCount
}

// bucketMid is the middle of a bucket's range.
func bucketMid(i int) uint64 {
	if i < subCount {
		return uint64(i)
	}
	shift := i/subCount - 1
	lo := uint64(subCount+i%subCount) << shift
	return lo + (uint64(1)<<shift)/2
}

// Record adds one duration.
func (h *Hist) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(uint64(d))]++
	h.n++
	h.sum += d
	h.max = max(h.max, d)
}

// Count is the number of recorded durations.
func (h *Hist) Count() uint64 { return h.n }

// Total is the sum of recorded durations.
func (h *Hist) Total() time.Duration { return h.sum }

// Quantile returns the q-quantile (0 < q <= 1), within the bucket
// precision; the maximum is exact.
func (h *Hist) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	rank = max(1, min(rank, h.n))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(time.Duration(bucketMid(i)), h.max)
		}
	}
	return h.max
}

// Max is the largest recorded duration.
func (h *Hist) Max() time.Duration { return h.max }
