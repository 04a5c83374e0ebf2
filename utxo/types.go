package utxo

import (
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo/model"
)

// Spend names one output and, for Spend, the input spending it.
type Spend struct {
	// TxID and Vout name the output.
	TxID chainhash.Hash
	Vout uint32
	// UTXOHash is the hash the spender claims the output has. When nil the
	// spender makes no claim and the hash is not checked; when set, a
	// mismatch is refused with UTXO_HASH_MISMATCH.
	UTXOHash *chainhash.Hash
	// SpendingData names the spending input.
	SpendingData *model.SpendingData
	// ConflictingTxID is the transaction already spending the output, when
	// the spend was refused with SPENT.
	ConflictingTxID *chainhash.Hash
	// Err is this spend's outcome.
	Err error
}

// SpendResponse is the state of one output, as GetSpend reports it.
type SpendResponse struct {
	Status OutputStatus
	// SpendingData is the spender of a spent output; for a frozen one,
	// 32 × 0xFF with the output's vout as the input (the reference's
	// frozen spending data); nil while unspent.
	SpendingData *model.SpendingData
	// SpendableIn is the reassignment hold of the output: a spend in a
	// block at or below this height is refused with FROZEN_UNTIL; 0 when
	// it is not limited.
	SpendableIn uint32
	// LockTime is the transaction's lock time.
	LockTime uint32
}

// OutputStatus is the state of one output.
type OutputStatus uint8

// The states an output can be in.
const (
	StatusNotFound OutputStatus = iota
	StatusUnspent
	StatusSpent
	StatusFrozen
	StatusLocked
	StatusConflicting
	StatusImmature
)

func (s OutputStatus) String() string {
	return [...]string{"not_found", "unspent", "spent", "frozen", "locked", "conflicting", "immature"}[s]
}

// Meta is what Get returns about a transaction.
type Meta struct {
	TxID chainhash.Hash
	// Tx is the transaction; nil unless FieldTx was asked for. Of a
	// transaction known by its outputs only (OutputsOnly, or an external
	// .outputs blob) it has no inputs, and empty outputs where those it
	// has are not.
	Tx          *chain.Tx
	Fee         uint64
	SizeInBytes uint64
	TxInpoints  model.TxInpoints
	LockTime    uint32

	BlockIDs     []uint32
	BlockHeights []uint32
	SubtreeIdxs  []int

	IsCoinbase  bool
	Locked      bool
	Creating    bool
	Conflicting bool
	Frozen      bool
	External    bool
	// OutputsOnly: the store has the transaction's outputs alone, as a UTXO
	// snapshot gave them (see LoadSnapshot).
	OutputsOnly         bool
	ConflictingChildren []chainhash.Hash

	UnminedSince   uint32
	CreatedAt      int64
	PreserveUntil  uint32
	DeleteAtHeight uint32
	SpendingHeight uint32

	// Outputs holds the state of every output, in vout order, combined
	// from all the transaction's records.
	Outputs []OutputState
	// Records is the number of records the transaction occupies.
	Records int
}

// OutputState is one output as Get reports it.
type OutputState struct {
	// Stored is false for outputs that are not kept as UTXOs (zero-value
	// data outputs).
	Stored       bool
	UTXOHash     chainhash.Hash
	SpendingData *model.SpendingData // nil while unspent
	Frozen       bool
	// SpendableIn is the reassignment hold, when limited: the output may
	// be spent in blocks above this height.
	SpendableIn uint32
}

// Field selects what Get and BatchDecorate read.
type Field uint8

// The fields; FieldTx costs a read of the transaction bytes (possibly from
// the blob store), FieldOutputs combines every record of a paginated
// transaction.
const (
	FieldTx Field = iota + 1
	FieldOutputs
)

// UnresolvedMetaData is one request of BatchDecorate.
type UnresolvedMetaData struct {
	TxID chainhash.Hash
	// Idx is the caller's own index, returned untouched.
	Idx  int
	Meta *Meta
	Err  error
}
