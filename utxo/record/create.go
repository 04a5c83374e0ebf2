package record

import (
	"math"
	"slices"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/utxo/model"
)

// BuildParams describe a new transaction to store (the reference's Create).
type BuildParams struct {
	TxID chainhash.Hash
	// UtxoHashes has one entry per output: the UTXO hash, or nil when the
	// output is not stored as a UTXO (ShouldStoreOutputAsUTXO said no).
	UtxoHashes []*chainhash.Hash
	// Tx is the raw (extended) transaction, kept on the master unless
	// External. Ignored when External.
	Tx []byte
	// External: the transaction bytes live in the blob store. Forced on for
	// a transaction that needs more than one record (see Build).
	External bool
	// OutputsOnly: Tx holds only the transaction's outputs, as a
	// UTXOWrapper (see Record.OutputsOnly); it stays in the master even
	// when the transaction needs more than one record.
	OutputsOnly bool

	Version     uint32
	LockTime    uint32
	Fee         uint64
	SizeInBytes uint64
	TxInpoints  model.TxInpoints
	IsCoinbase  bool

	// BatchSize is the number of outputs per record (<= 0: default).
	BatchSize int
	// CurrentHeight is the chain height at creation: UnminedSince of an
	// unmined tx, and the base of a conflicting tx's DAH.
	CurrentHeight uint32
	// Retention is the DAH retention in blocks (0 disables DAH).
	Retention uint32
	// CreatedAt is the creation time in unix milliseconds (the caller's
	// clock; this package reads none).
	CreatedAt int64

	// MinedBlocks: the blocks that already mined the tx (block validation,
	// legacy sync). Empty for a mempool transaction.
	MinedBlocks []model.MinedBlockInfo
	// Frozen creates every stored output frozen.
	Frozen bool
	// Conflicting creates the tx as a double spend (scheduled for deletion).
	Conflicting bool
	// Locked creates the tx locked (two-phase commit with block assembly).
	Locked bool
	// Creating sets the multi-record creation flag on every record; the
	// caller clears it (children first, master last) once all are written.
	Creating bool
}

// Build splits a new transaction into its master and child records, in
// index order, ready to encode and write with create-only semantics.
//
// Every record gets its batch of outputs and the common metadata (TxID,
// Version, LockTime, Fee, SizeInBytes, IsCoinbase, SpendingHeight, Locked,
// Creating, Conflicting). The master also gets TotalUtxos (all outputs,
// stored or not), TotalExtraRecs, SpentExtraRecs, the block references,
// UnminedSince (CurrentHeight when no mined block is given, at least 1, else
// 0, as the reference does), CreatedAt, External/Tx and TxInpoints.
//
// Rules taken from the reference:
//   - more than one record forces External (and drops Tx): the caller must
//     then write the transaction to the blob store. Check records[0].External.
//     A transaction known by its outputs only (OutputsOnly) keeps them in
//     the master instead: they are what a snapshot gives of it, with no
//     transaction to put in a blob store.
//   - a coinbase's SpendingHeight is CurrentHeight + 100, whatever the
//     blocks in MinedBlocks (aerospike/create.go and sql.go count from
//     Create's blockHeight); SetMined never changes it.
//   - a conflicting tx's master is created with DAH CurrentHeight+Retention.
//
// Additions: child records with no stored output start out fully spent and
// are counted in the master's SpentExtraRecs, so they never hold the
// transaction's deletion back; and the DAH rule runs on the new master, so a
// mined transaction with no spendable output is scheduled at once.
func Build(p BuildParams) ([]*Record, error) {
	n := len(p.UtxoHashes)
	if n == 0 {
		return nil, model.NewError(model.CodeInvalidParameter, p.TxID, 0, "transaction has no outputs")
	}
	if uint64(n) > math.MaxUint32 {
		return nil, model.NewError(model.CodeInvalidParameter, p.TxID, 0, "transaction has %d outputs", n)
	}
	if len(p.TxInpoints.ParentTxHashes) != len(p.TxInpoints.Idxs) {
		return nil, model.NewError(model.CodeInvalidParameter, p.TxID, 0, "txInpoints parents and indices differ in length")
	}
	batch := normalizeBatchSize(p.BatchSize)
	count := NumRecords(n, batch)

	var spendingHeight uint32
	if p.IsCoinbase {
		spendingHeight = p.CurrentHeight + model.CoinbaseMaturity
	}

	records := make([]*Record, count)
	for i := range records {
		lo := i * batch
		hi := min(lo+batch, n)
		r := &Record{
			TxID:           p.TxID,
			Index:          uint32(i),
			FirstVout:      uint32(lo),
			Utxos:          make([]Entry, hi-lo),
			Version:        p.Version,
			LockTime:       p.LockTime,
			Fee:            p.Fee,
			SizeInBytes:    p.SizeInBytes,
			IsCoinbase:     p.IsCoinbase,
			SpendingHeight: spendingHeight,
			Locked:         p.Locked,
			Creating:       p.Creating,
			Conflicting:    p.Conflicting,
		}
		// The unspent entries of a record share one buffer: entries are
		// replaced, never written into.
		var unspent []byte
		if !p.Frozen {
			unspent = make([]byte, 0, UtxoHashSize*(hi-lo))
		}
		for j, hash := range p.UtxoHashes[lo:hi] {
			if hash == nil {
				continue
			}
			if p.Frozen {
				r.Utxos[j] = NewFrozenEntry(*hash)
				r.Frozen = true
			} else {
				at := len(unspent)
				unspent = append(unspent, hash[:]...)
				r.Utxos[j] = Entry(unspent[at:len(unspent):len(unspent)])
			}
			r.RecordUtxos++
		}
		records[i] = r
	}

	m := records[0]
	m.TotalUtxos = uint32(n)
	m.TotalExtraRecs = uint32(count - 1)
	for _, c := range records[1:] {
		if c.ownOutputsSpent() {
			m.SpentExtraRecs++
		}
	}
	for _, b := range p.MinedBlocks {
		if !slices.Contains(m.BlockIDs, b.BlockID) {
			m.BlockIDs = append(m.BlockIDs, b.BlockID)
			m.BlockHeights = append(m.BlockHeights, b.BlockHeight)
			m.SubtreeIdxs = append(m.SubtreeIdxs, b.SubtreeIdx)
		}
	}
	if len(m.BlockIDs) == 0 {
		m.UnminedSince = unminedSinceHeight(p.CurrentHeight)
	}
	m.CreatedAt = p.CreatedAt
	m.External = p.External || (count > 1 && !p.OutputsOnly)
	m.OutputsOnly = p.OutputsOnly && !m.External
	if !m.External {
		m.Tx = p.Tx
	}
	m.TxInpoints = p.TxInpoints.Clone()
	m.reevaluateDAH(p.CurrentHeight, p.Retention)
	return records, nil
}
