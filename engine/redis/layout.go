package redis

import (
	"encoding/binary"
	"strconv"

	"github.com/utxostore/utxostore/engine"
)

// layout names the Redis keys of one namespace.
//
// A record's own key picks its bucket (its leading four bytes modulo the
// bucket count), and bucket b lives on hash slot b·(16384/buckets) through a
// hash tag chosen to hash there:
//
//	<ns>:{<tag>}r<32-byte key>   the record: 8-byte stamp ‖ value
//	<ns>:{<tag>}i<1|2|3>         per-bucket sorted set per index: member = key, score = term
//	<ns>:{<tag>}c                checkpoint marker written before WAIT
//	<ns>:{<tag0>}m               metadata hash (bucket 0)
//	<ns>:{<tag0>}layout          the bucket count, fixed when the namespace is made
//
// Why buckets and not one index per record slot: the CAS script must touch
// the record and its index entries in one slot, so an index cannot be
// global; with one sorted set per slot every Scan would send 16384
// commands. Buckets keep records spread by their own key (records of one
// transaction have unrelated keys, so they scatter), keep each record and
// its index entries on one slot, and bound a Scan to one command per bucket.
// The buckets are spread evenly over the slot space, so any even slot
// assignment gives every master an even share.
type layout struct {
	ns      string
	buckets int
	prefix  []string // per bucket: "<ns>:{<tag>}"
}

func newLayout(ns string, buckets int) *layout {
	l := &layout{ns: ns, buckets: buckets, prefix: make([]string, buckets)}
	tags := slotTags()
	for b := range l.prefix {
		l.prefix[b] = ns + ":{" + tags[b*(slots/buckets)] + "}"
	}
	return l
}

// configKey does not depend on the bucket count, so it can be read first.
func configKey(ns string) string { return ns + ":{" + slotTags()[0] + "}layout" }

func (l *layout) bucket(k engine.Key) int {
	return int(binary.BigEndian.Uint32(k[:4]) & uint32(l.buckets-1))
}

func (l *layout) record(k engine.Key) string {
	return l.prefix[l.bucket(k)] + "r" + string(k[:])
}

func (l *layout) index(b int, idx engine.Index) string {
	return l.prefix[b] + "i" + strconv.Itoa(int(idx))
}

// indexesOf returns the index sets that record k's entries live in, in the
// order of engine.Indexes.
func (l *layout) indexesOf(k engine.Key) []string {
	b := l.bucket(k)
	out := make([]string, len(engine.Indexes))
	for i, idx := range engine.Indexes {
		out[i] = l.index(b, idx)
	}
	return out
}

func (l *layout) checkpoint(b int) string { return l.prefix[b] + "c" }

func (l *layout) meta() string { return l.prefix[0] + "m" }

// recordPattern matches every record key of the namespace and nothing else:
// the namespace holds no braces or glob characters, and only record keys
// have "}r" after the tag.
func (l *layout) recordPattern() string { return l.ns + ":{*}r*" }

// keyOf recovers the record key from a Redis key matched by recordPattern.
func keyOf(redisKey string) (engine.Key, bool) {
	var k engine.Key
	if len(redisKey) < engine.KeySize+2 || redisKey[len(redisKey)-engine.KeySize-1] != 'r' {
		return k, false
	}
	copy(k[:], redisKey[len(redisKey)-engine.KeySize:])
	return k, true
}
