package sozu

import (
	"encoding/binary"
	"math/bits"

	"github.com/utxostore/utxostore/engine"
)

// The hash of a key is its first 8 bytes, big-endian: keys are uniform
// already (txids, or hashes of txid and index). Its top bits pick the
// shard; the bits after them pick the bucket in every layer, so the
// children of bucket j of layer i are exactly the buckets of layer i+1
// whose index starts with j's bits: j·2^k … j·2^k+2^k−1.
func keyHash(k *engine.Key) uint64 { return binary.BigEndian.Uint64(k[:8]) }

type layout struct {
	shardBits  int
	b0Bits     int
	fanoutBits int
	layers     int
}

func newLayout(o Options) layout {
	return layout{
		shardBits:  bits.TrailingZeros(uint(o.Shards)),
		b0Bits:     bits.TrailingZeros(uint(o.Layer0Buckets)),
		fanoutBits: o.FanoutBits,
		layers:     o.Layers,
	}
}

func (l layout) shard(h uint64) int {
	if l.shardBits == 0 {
		return 0
	}
	return int(h >> (64 - l.shardBits))
}

// bucketIndex is the index of the bucket of layer that covers hash h
// within its shard.
func (l layout) bucketIndex(h uint64, layer int) uint64 {
	n := l.b0Bits + l.fanoutBits*layer
	if n == 0 {
		return 0
	}
	return (h << l.shardBits) >> (64 - n)
}

// bucketsIn is the number of buckets of layer per shard: B0·2^(k·layer).
func (l layout) bucketsIn(layer int) uint64 { return uint64(1) << (l.b0Bits + l.fanoutBits*layer) }

// summarized reports whether the buckets of layer have summaries in
// memory (pageStore.summarize): the deep layers of at most
// summarizedBuckets buckets per shard.
func (l layout) summarized(layer int) bool {
	return layer > 0 && layer < l.layers && l.bucketsIn(layer) <= summarizedBuckets
}

// layerCounters are kept up to date on every change so Stats costs no scan.
type layerCounters struct {
	entries int64
	bytes   int64
	buckets int64 // buckets holding at least one entry
}
