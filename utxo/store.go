// Package utxo is the public API of utxostore: the Store interface with every
// operation of the UTXO lifecycle, and its implementation over any engine.
//
// One record is kept per transaction (paginated over several records when it
// has more outputs than one record holds). Every rule of the state machine
// lives in package utxo/record; this package batches operations, routes each
// output to the record that holds it, runs the lock-record two-phase commit
// for multi-record transactions and keeps delete-at-height and preservation
// bookkeeping. The values a caller shares with the rules (the typed
// *model.Error every refusal returns, SpendingData, TxInpoints,
// MinedBlockInfo) are package utxo/model's.
//
// A store can also start from a UTXO snapshot instead of the genesis block
// (LoadSnapshot): a transaction it holds then is known by its unspent
// outputs alone, kept in its record (OutputsOnly), its other outputs not
// stored; snapshot.go says how such a record looks. ForEachCoin walks the
// set the other way, for a snapshot of the store.
package utxo

import (
	"context"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo/model"
)

// Store is the UTXO store. All methods are safe for concurrent use.
type Store interface {
	// Health reports whether the store can serve requests.
	Health(ctx context.Context) error

	// Create stores a new transaction and its outputs. It fails with
	// TX_EXISTS when the transaction is already stored (and completes an
	// interrupted multi-record create instead, if it finds one).
	Create(ctx context.Context, tx *chain.Tx, blockHeight uint32, opts ...CreateOption) (*Meta, error)
	// Get returns the transaction's metadata; fields selects what to read
	// (all when empty).
	Get(ctx context.Context, txid chainhash.Hash, fields ...Field) (*Meta, error)
	// Delete removes the transaction's records and external blob; deleting
	// a transaction that is not stored succeeds.
	Delete(ctx context.Context, txid chainhash.Hash) error

	// GetSpend reports the state of one output.
	GetSpend(ctx context.Context, spend *Spend) (*SpendResponse, error)
	// Spend marks every output tx's inputs consume as spent by tx. It is all
	// or nothing: when one input fails, the ones already spent are unspent
	// again, each Spend carries its own error, and the returned error is the
	// first failure.
	Spend(ctx context.Context, tx *chain.Tx, opts ...SpendOption) ([]*Spend, error)
	// Unspend reverses spends; flagAsLocked locks the parents again.
	Unspend(ctx context.Context, spends []*Spend, flagAsLocked bool) error

	// SetMinedMulti records that the transactions were mined in a block (or,
	// with info.UnsetMined, that the block no longer holds them). It returns
	// the block IDs each transaction is now mined in. It, and the other
	// calls that mark transactions (MarkTransactionsOnLongestChain,
	// SetLocked, SetConflicting), refuse a list naming a transaction the
	// store does not hold with TX_NOT_FOUND for each, and mark none of
	// the others; unsetting a block skips such a transaction instead.
	SetMinedMulti(ctx context.Context, txids []chainhash.Hash, info model.MinedBlockInfo) (map[chainhash.Hash][]uint32, error)
	// MarkTransactionsOnLongestChain sets or clears unminedSince.
	MarkTransactionsOnLongestChain(ctx context.Context, txids []chainhash.Hash, onLongestChain bool) error
	// SetLocked sets or clears the locked flag.
	SetLocked(ctx context.Context, txids []chainhash.Hash, locked bool) error

	// GetUnminedTxIterator yields unmined transactions that are not
	// conflicting, in createdAt order, for recovery after a restart.
	GetUnminedTxIterator(ctx context.Context) (UnminedTxIterator, error)
	// QueryOldUnminedTransactions lists unmined transactions stored at or
	// before cutoffHeight.
	QueryOldUnminedTransactions(ctx context.Context, cutoffHeight uint32) ([]chainhash.Hash, error)
	// PreserveTransactions keeps the transactions from deletion until the
	// given height.
	PreserveTransactions(ctx context.Context, txids []chainhash.Hash, preserveUntil uint32) error
	// ProcessExpiredPreservations turns preservations that have expired at
	// currentHeight back into ordinary delete-at-height scheduling.
	ProcessExpiredPreservations(ctx context.Context, currentHeight uint32) error

	// BatchDecorate fills in the metadata of many transactions at once.
	BatchDecorate(ctx context.Context, items []*UnresolvedMetaData, fields ...Field) error
	// PreviousOutputsDecorate returns, for each input of tx, the output it
	// spends (amount and locking script).
	PreviousOutputsDecorate(ctx context.Context, tx *chain.Tx) ([]*wire.TxOut, error)

	// FreezeUTXOs and UnFreezeUTXOs are the alert system's freeze.
	FreezeUTXOs(ctx context.Context, spends []*Spend) error
	UnFreezeUTXOs(ctx context.Context, spends []*Spend) error
	// ReAssignUTXO moves a frozen output to a new UTXO hash, spendable
	// ReassignmentDelay blocks later.
	ReAssignUTXO(ctx context.Context, utxo *Spend, newUtxo *Spend) error

	// GetCounterConflicting returns the transactions that double spend an
	// input of txid and their descendants (its counter-conflicting set),
	// txid included.
	GetCounterConflicting(ctx context.Context, txid chainhash.Hash) ([]chainhash.Hash, error)
	// GetConflictingChildren returns the transactions recorded as
	// conflicting children of txid and those spending its outputs, with
	// all their descendants.
	GetConflictingChildren(ctx context.Context, txid chainhash.Hash) ([]chainhash.Hash, error)
	// SetConflicting marks (or unmarks) the transactions conflicting. It
	// returns their inputs as spends, and the transactions spending their
	// outputs (the next generation for a recursive marker).
	SetConflicting(ctx context.Context, txids []chainhash.Hash, conflicting bool) ([]*Spend, []chainhash.Hash, error)

	// SetBlockHeight and GetBlockHeight hold the longest chain's height,
	// against which maturity, frozen-until and delete-at-height are judged.
	// Reaching a height runs what it makes due, as a connected block does:
	// expired preservations, old unmined transactions' cleanup, the prune.
	SetBlockHeight(ctx context.Context, height uint32) error
	GetBlockHeight() uint32
	SetMedianBlockTime(ctx context.Context, t uint32) error
	GetMedianBlockTime() uint32

	// Close checkpoints and closes the store.
	Close() error
}

// UnminedTxIterator walks unmined transactions.
type UnminedTxIterator interface {
	// Next returns the next transaction, or nil at the end.
	Next(ctx context.Context) (*UnminedTransaction, error)
}

// UnminedTransaction is one item of the unmined iterator.
type UnminedTransaction struct {
	TxID         chainhash.Hash
	CreatedAt    int64 // unix milliseconds
	UnminedSince uint32
	Fee          uint64
	SizeInBytes  uint64
	Locked       bool
	Creating     bool
}
