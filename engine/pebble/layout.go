package pebble

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"time"

	"github.com/utxostore/utxostore/engine"
)

// Key layout. Every key starts with a one-byte prefix so that each kind of
// entry is one contiguous range of pebble's key space:
//
//	'r' key[32]                       record: header ‖ value
//	'i' index[1] term[4 BE] key[32]   secondary index entry, empty value
//	't' expiry[8 BE] key[32]          time-to-live entry, empty value
//	'm' name                          store-wide metadata
//	'v'                               layout version of this package
//
// Index and time-to-live keys put the big-endian term first, so a scan of a
// term range is one range iteration.
const (
	prefixRecord  = 'r'
	prefixIndex   = 'i'
	prefixTTL     = 't'
	prefixMeta    = 'm'
	prefixVersion = 'v'
)

// layoutVersion is stored under prefixVersion when a store is created; an
// open refuses any other, so a future layout change cannot be misread.
const layoutVersion = "1"

func recordKey(k engine.Key) []byte {
	return append([]byte{prefixRecord}, k[:]...)
}

func indexKey(idx engine.Index, term uint32, k engine.Key) []byte {
	b := make([]byte, 0, 2+4+engine.KeySize)
	b = append(b, prefixIndex, byte(idx))
	b = binary.BigEndian.AppendUint32(b, term)
	return append(b, k[:]...)
}

// indexBounds returns the [lower, upper) key range holding the entries of
// idx with terms in [lo, hi].
func indexBounds(idx engine.Index, lo, hi uint32) (lower, upper []byte) {
	lower = binary.BigEndian.AppendUint32([]byte{prefixIndex, byte(idx)}, lo)
	if hi == math.MaxUint32 {
		return lower, []byte{prefixIndex, byte(idx) + 1}
	}
	return lower, binary.BigEndian.AppendUint32([]byte{prefixIndex, byte(idx)}, hi+1)
}

func ttlKey(expires int64, k engine.Key) []byte {
	b := binary.BigEndian.AppendUint64([]byte{prefixTTL}, uint64(expires))
	return append(b, k[:]...)
}

func metaKey(name string) []byte {
	return append([]byte{prefixMeta}, name...)
}

// prefixBounds returns the [lower, upper) range of every key starting with p.
func prefixBounds(p byte) (lower, upper []byte) {
	return []byte{p}, []byte{p + 1}
}

// Record header flags.
const (
	flagExpires  = 1 << 0 // an 8-byte expiry follows the terms
	flagConsumed = 1 << 1 // Terms.Consumed
	knownFlags   = flagExpires | flagConsumed
)

// record is a decoded record entry. The terms live next to the value so that
// an update can find and remove the index entries of the version it
// replaces without a reverse index.
type record struct {
	terms   engine.Terms
	expires int64 // unix nanoseconds; zero: never
	value   []byte
}

func (r *record) live(now int64) bool {
	return r != nil && (r.expires == 0 || now < r.expires)
}

// encodeRecord lays out flags ‖ uvarint terms ‖ [expiry] ‖ value. Terms are
// varints because most are zero: the usual header is five bytes.
func encodeRecord(terms engine.Terms, expires int64, value []byte) []byte {
	var flags byte
	if expires != 0 {
		flags |= flagExpires
	}
	if terms.Consumed {
		flags |= flagConsumed
	}
	b := make([]byte, 0, 1+4*binary.MaxVarintLen32+8+len(value))
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(terms.UnminedSince))
	b = binary.AppendUvarint(b, uint64(terms.DeleteAtHeight))
	b = binary.AppendUvarint(b, uint64(terms.PreserveUntil))
	b = binary.AppendUvarint(b, uint64(terms.ProducedAt))
	if expires != 0 {
		b = binary.BigEndian.AppendUint64(b, uint64(expires))
	}
	return append(b, value...)
}

// decodeRecord parses an entry; value aliases b.
func decodeRecord(k engine.Key, b []byte) (*record, error) {
	bad := func(detail string) error {
		return &engine.CorruptionError{Engine: Name, Where: "record " + hex.EncodeToString(k[:]), Detail: detail}
	}
	if len(b) == 0 {
		return nil, bad("empty entry")
	}
	flags := b[0]
	if flags&^knownFlags != 0 {
		return nil, bad(fmt.Sprintf("unknown header flags %#x", flags))
	}
	r := &record{}
	r.terms.Consumed = flags&flagConsumed != 0
	rest := b[1:]
	for _, t := range []*uint32{&r.terms.UnminedSince, &r.terms.DeleteAtHeight, &r.terms.PreserveUntil, &r.terms.ProducedAt} {
		v, n := binary.Uvarint(rest)
		if n <= 0 || v > math.MaxUint32 {
			return nil, bad("bad term varint")
		}
		*t = uint32(v)
		rest = rest[n:]
	}
	if flags&flagExpires != 0 {
		if len(rest) < 8 {
			return nil, bad("truncated expiry")
		}
		r.expires = int64(binary.BigEndian.Uint64(rest))
		if r.expires == 0 {
			return nil, bad("zero expiry")
		}
		rest = rest[8:]
	}
	r.value = rest
	return r, nil
}

func expiry(now time.Time, ttl time.Duration) int64 {
	if ttl <= 0 {
		return 0
	}
	return now.Add(ttl).UnixNano()
}
