package record

import (
	"bytes"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/utxo/model"
)

// Sizes of a UTXO entry, as the reference's data model has them: the hash
// alone while unspent, the hash plus spending data once spent or frozen.
const (
	UtxoHashSize  = 32
	FullEntrySize = UtxoHashSize + SpendingDataSize
)

// Entry is one slot of a record's utxos array, in the reference's byte
// format:
//
//	nil       the output is not stored as a UTXO (e.g. a 0-sat OP_RETURN)
//	32 bytes  unspent: the UTXO hash
//	68 bytes  spent:   hash ‖ spending txid ‖ LE uint32 input index
//	68 bytes  frozen:  hash ‖ 36 × 0xFF
//
// Entries are treated as immutable: operations replace a slot with a new
// Entry instead of writing into it, so decoded entries may share one buffer.
type Entry []byte

// NewUnspentEntry returns a 32-byte entry for hash.
func NewUnspentEntry(hash chainhash.Hash) Entry {
	e := make(Entry, UtxoHashSize)
	copy(e, hash[:])
	return e
}

// NewSpentEntry returns a 68-byte entry for hash spent by s.
func NewSpentEntry(hash chainhash.Hash, s model.SpendingData) Entry {
	e := make(Entry, 0, FullEntrySize)
	e = append(e, hash[:]...)
	return appendSpendingData(e, s)
}

// NewFrozenEntry returns a 68-byte entry for hash carrying the freeze marker.
func NewFrozenEntry(hash chainhash.Hash) Entry {
	return NewSpentEntry(hash, frozenSpendingData)
}

// DecodeEntry validates b as an entry (nil/empty, 32 or 68 bytes) and
// returns a copy, so the result does not alias the caller's buffer.
func DecodeEntry(b []byte) (Entry, error) {
	switch len(b) {
	case 0:
		return nil, nil
	case UtxoHashSize, FullEntrySize:
		return Entry(bytes.Clone(b)), nil
	default:
		return nil, malformed("utxo entry is %d bytes, want 0, %d or %d", len(b), UtxoHashSize, FullEntrySize)
	}
}

// Stored reports whether the output is stored as a UTXO at all.
func (e Entry) Stored() bool { return len(e) != 0 }

// Hash returns the UTXO hash (zero for a nil entry).
func (e Entry) Hash() chainhash.Hash {
	var h chainhash.Hash
	if len(e) >= UtxoHashSize {
		copy(h[:], e[:UtxoHashSize])
	}
	return h
}

// HashEquals reports whether the entry's UTXO hash is h, without copying.
func (e Entry) HashEquals(h *chainhash.Hash) bool {
	return len(e) >= UtxoHashSize && bytes.Equal(e[:UtxoHashSize], h[:])
}

// IsFrozen reports whether the entry carries the freeze marker.
func (e Entry) IsFrozen() bool {
	if len(e) != FullEntrySize {
		return false
	}
	for _, b := range e[UtxoHashSize:] {
		if b != 0xff {
			return false
		}
	}
	return true
}

// IsSpent reports whether the entry is spent by a real transaction (a frozen
// entry is 68 bytes too but is not spent).
func (e Entry) IsSpent() bool { return len(e) == FullEntrySize && !e.IsFrozen() }

// IsUnspent reports whether the entry is a stored, unspent, unfrozen output.
func (e Entry) IsUnspent() bool { return len(e) == UtxoHashSize }

// SpendingData returns the spender of a spent entry; ok is false for nil,
// unspent and frozen entries.
func (e Entry) SpendingData() (s model.SpendingData, ok bool) {
	if !e.IsSpent() {
		return model.SpendingData{}, false
	}
	s, _ = DecodeSpendingData(e[UtxoHashSize:])
	return s, true
}

// valid reports whether the entry has one of the three legal sizes.
func (e Entry) valid() bool {
	return len(e) == 0 || len(e) == UtxoHashSize || len(e) == FullEntrySize
}
