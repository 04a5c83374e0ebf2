package record

import (
	"bytes"
	"maps"
	"slices"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/utxo/model"
)

// Reassignment records that the alert system moved a frozen output to a new
// UTXO hash (a new owner) at BlockHeight.
type Reassignment struct {
	Offset      uint32
	UtxoHash    chainhash.Hash
	NewUtxoHash chainhash.Hash
	BlockHeight uint32
}

// Record is one stored record of a transaction: the master (Index 0) or a
// child (Index 1..TotalExtraRecs). Fields follow the record table of
// Teranode's UTXO data model (docs/topics/datamodel/utxo_data_model.md at
// fb3d000).
// Metadata only the master carries is zero on children: TotalUtxos,
// TotalExtraRecs, SpentExtraRecs, UnminedSince, CreatedAt, BlockIDs,
// BlockHeights, SubtreeIdxs, External, Tx, TxInpoints, ConflictingChildren.
type Record struct {
	// TxID names the transaction; stored because child keys are hashes.
	TxID chainhash.Hash
	// Index is 0 for the master record and 1..N-1 for child records.
	Index uint32
	// FirstVout is the output index of Utxos[0] (Index × batch size), so a
	// record can name its outputs in errors without knowing the batch size.
	FirstVout uint32

	// Utxos holds this record's outputs; see Entry.
	Utxos []Entry
	// UtxoSpendableIn maps an offset to the first block height at which
	// that output may be spent (set by Reassign). Nil when empty.
	UtxoSpendableIn map[uint32]uint32
	// RecordUtxos is the number of stored (non-nil) entries in Utxos.
	RecordUtxos uint32
	// SpentUtxos is the number of entries spent by a real transaction.
	SpentUtxos uint32

	// TotalUtxos is the number of outputs of the whole transaction (master).
	TotalUtxos uint32
	// TotalExtraRecs is the number of child records (master).
	TotalExtraRecs uint32
	// SpentExtraRecs is how many child records are fully spent (master).
	SpentExtraRecs uint32

	// Frozen is true while at least one entry carries the freeze marker.
	Frozen bool
	// Locked refuses spends until block assembly (or mining) unlocks it.
	Locked bool
	// Creating marks a record of an unfinished multi-record create.
	Creating bool
	// Conflicting marks a double spend; its outputs cannot be spent.
	Conflicting bool
	// ConflictingChildren lists spenders of this tx marked conflicting.
	ConflictingChildren []chainhash.Hash
	// DeletedChildren lists the transactions spending outputs of this
	// record that have since been pruned (the reference's deletedChildren
	// bin). Spend refuses their re-spend with INVALID_SPEND.
	DeletedChildren []chainhash.Hash

	// UnminedSince is the height at which the tx was stored while not on
	// the longest chain; 0 once mined on the longest chain.
	UnminedSince uint32
	// CreatedAt is when the record was created, in unix milliseconds.
	CreatedAt int64
	// PreserveUntil protects the record from deletion (parents of unmined
	// transactions). While non-zero no DeleteAtHeight is set.
	PreserveUntil uint32
	// DeleteAtHeight is the block height at which the record may be pruned.
	DeleteAtHeight uint32
	// SpendingHeight is the first height at which a coinbase's outputs may
	// be spent (Create's block height + 100); 0 for other transactions.
	SpendingHeight uint32

	// BlockIDs, BlockHeights and SubtreeIdxs are parallel lists of the
	// blocks that mined the transaction (master).
	BlockIDs     []uint32
	BlockHeights []uint32
	SubtreeIdxs  []int

	// External means the transaction bytes live in the blob store.
	External bool
	// Reassignments is the history of alert-system reassignments.
	Reassignments []Reassignment
	// Tx is the raw (extended) transaction; nil when External or on children.
	// When OutputsOnly it holds the transaction's outputs instead.
	Tx []byte
	// OutputsOnly marks a transaction known by its outputs alone, as a UTXO
	// snapshot gives them (no inputs, no version, no lock time): Tx holds
	// those outputs as a UTXOWrapper, the layout of an external .outputs
	// blob, and is kept in the master whatever the number of records.
	OutputsOnly bool

	// Version and LockTime of the transaction (common metadata).
	Version  uint32
	LockTime uint32
	// Fee in satoshis and serialized size of the transaction.
	Fee         uint64
	SizeInBytes uint64
	// TxInpoints lists the outpoints the transaction spends (master).
	TxInpoints model.TxInpoints
	// IsCoinbase marks a coinbase transaction.
	IsCoinbase bool

	// keptInpoints holds the encoded inpoints of a record read by
	// DecodeForUpdate, which leaves TxInpoints empty; see there.
	keptInpoints []byte
}

// MinedOnLongestChain reports whether the record's transaction is the
// chain's: mined in a block on the longest chain, and not conflicting.
// Only a master carries what it takes.
func (r *Record) MinedOnLongestChain() bool {
	return !r.Conflicting && r.UnminedSince == 0 && len(r.BlockIDs) > 0
}

// IsMaster reports whether this is the transaction's master record.
func (r *Record) IsMaster() bool { return r.Index == 0 }

// Clone returns a deep copy. Entries are immutable and may be shared.
func (r *Record) Clone() *Record {
	c := *r
	c.Utxos = slices.Clone(r.Utxos)
	c.UtxoSpendableIn = maps.Clone(r.UtxoSpendableIn)
	c.ConflictingChildren = slices.Clone(r.ConflictingChildren)
	c.DeletedChildren = slices.Clone(r.DeletedChildren)
	c.BlockIDs = slices.Clone(r.BlockIDs)
	c.BlockHeights = slices.Clone(r.BlockHeights)
	c.SubtreeIdxs = slices.Clone(r.SubtreeIdxs)
	c.Reassignments = slices.Clone(r.Reassignments)
	c.Tx = bytes.Clone(r.Tx)
	c.TxInpoints = r.TxInpoints.Clone()
	c.keptInpoints = bytes.Clone(r.keptInpoints)
	return &c
}

// ownOutputsSpent reports whether every output stored in this record is
// spent. A record that ever had an output reassigned never counts as spent:
// the reference bumps recordUtxos on reassignment precisely so that such a
// record is kept (never scheduled for deletion); this package keeps
// RecordUtxos equal to the stored entries and encodes the rule here instead.
func (r *Record) ownOutputsSpent() bool {
	return r.SpentUtxos == r.RecordUtxos && len(r.Reassignments) == 0
}

// fullySpent is the master's "whole transaction spent" condition: its own
// outputs and every child record.
func (r *Record) fullySpent() bool {
	return r.ownOutputsSpent() && r.SpentExtraRecs == r.TotalExtraRecs
}

// recomputeFrozen keeps Frozen equal to "some entry is frozen".
func (r *Record) recomputeFrozen() {
	r.Frozen = slices.ContainsFunc(r.Utxos, Entry.IsFrozen)
}

// entryAt returns the stored entry at offset or an UTXO_NOT_FOUND error,
// then checks the caller's hash (UTXO_HASH_MISMATCH). Every per-output
// operation starts here, in the reference's order.
func (r *Record) entryAt(offset uint32, utxoHash *chainhash.Hash) (Entry, *model.Error) {
	var e Entry
	if uint64(offset) < uint64(len(r.Utxos)) {
		e = r.Utxos[offset]
	}
	return r.checkEntry(e, offset, len(r.Utxos), utxoHash)
}

// checkEntry is entryAt's rule for e, the entry at offset of this record's
// count outputs (nil when offset is beyond them). It reads only the
// record's header fields, so a View shares it.
func (r *Record) checkEntry(e Entry, offset uint32, count int, utxoHash *chainhash.Hash) (Entry, *model.Error) {
	if uint64(offset) >= uint64(count) {
		return nil, r.outputError(model.CodeUtxoNotFound, offset, "offset %d beyond the %d outputs of record %d", offset, count, r.Index)
	}
	if !e.Stored() {
		return nil, r.outputError(model.CodeUtxoNotFound, offset, "output is not stored as a UTXO")
	}
	if !e.HashEquals(utxoHash) {
		return nil, r.outputError(model.CodeUtxoHashMismatch, offset, "utxo hash %s does not match the stored %s", utxoHash, e.Hash())
	}
	return e, nil
}
