package sozu

import (
	cuckoo "github.com/seiflotfy/cuckoofilter"

	"github.com/utxostore/utxostore/engine"
)

// keyFilter is the shard's proof of absence: a cuckoo filter holding one
// fingerprint per key stored in the shard. A page checkpoint stores it
// (derivedState), and the log replay brings it up to date; a store whose
// checkpoint lacks it (or holds it stale) rebuilds it from the data.
//
// Two rules keep it exact enough to trust a "no": a key is inserted only
// when the table proved it absent, and deleted only when it leaves the
// table, so a fingerprint is never removed on behalf of a key that never
// added it. When an insert fails the library has already evicted some
// other fingerprint, so the filter is marked stale and rebuilt, larger,
// from the table before it is consulted again.
type keyFilter struct {
	f        *cuckoo.Filter
	capacity uint
	stale    bool
	// key holds the key add or remove hands the library, which keeps
	// nothing of it but whose signature lets it: passing the caller's key
	// would move the caller's entry to the heap, an allocation per put.
	key engine.Key

	// Measured outcomes of lookups for keys the table then proved absent.
	trueNegatives, falsePositives uint64
}

// filterEncoding is the version of the filter's encoding in a checkpoint:
// the library's Encode() bytes, a fingerprint byte per slot in buckets of
// four, placed by the library's 64-bit hash of the key. The bytes mean
// nothing without that hash, so a checkpoint stores hashFingerprint with
// them, and a filter stored under another version or fingerprint is
// rebuilt from the pages rather than trusted: its "no" would be false for
// keys it holds, and a create would then add a second record.
const filterEncoding = 1

// hashFingerprint is a digest of how the filter library hashes keys: the
// encoding of a small filter holding fixed keys, which places each key by
// its hash. A library whose hash changed gives another digest.
func hashFingerprint() uint32 {
	f := cuckoo.NewFilter(1 << 10)
	for i := range 16 {
		var k engine.Key
		for j := range k {
			k[j] = byte(i*engine.KeySize + j)
		}
		f.Insert(k[:])
	}
	return checksum(f.Encode())
}

func newKeyFilter(capacity int) *keyFilter {
	return &keyFilter{f: cuckoo.NewFilter(uint(capacity)), capacity: uint(capacity)}
}

// mayContain reports whether k might be in the table; false is a proof of
// absence.
func (kf *keyFilter) mayContain(k *engine.Key) bool {
	if kf.stale {
		return true
	}
	return kf.f.Lookup(k[:])
}

func (kf *keyFilter) add(k *engine.Key) {
	kf.key = *k
	if !kf.stale && !kf.f.Insert(kf.key[:]) {
		kf.stale = true
	}
	// Keep the load below the point where inserts start failing.
	if kf.f.Count() > kf.capacity*9/10 {
		kf.stale = true
	}
}

func (kf *keyFilter) remove(k *engine.Key) {
	if !kf.stale {
		kf.key = *k
		kf.f.Delete(kf.key[:])
	}
}

// reset empties the filter with room for at least keys keys.
func (kf *keyFilter) reset(keys int) {
	c := kf.capacity
	for uint(keys) > c*7/10 {
		c *= 2
	}
	kf.capacity = c
	kf.f = cuckoo.NewFilter(c)
	kf.stale = false
}

// sizeBytes is the memory the fingerprints take (one byte each).
func (kf *keyFilter) sizeBytes() int64 {
	c := uint(1)
	for c < kf.capacity {
		c <<= 1
	}
	return int64(c)
}
