package utxo

import (
	"time"

	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/blob"
	"github.com/utxostore/utxostore/internal/setting"
	"github.com/utxostore/utxostore/utxo/model"
	"github.com/utxostore/utxostore/utxo/record"
)

// Defaults of the reference implementation.
const (
	// DefaultBlockHeightRetention is how many blocks a fully spent or
	// conflicting transaction is kept before deletion.
	DefaultBlockHeightRetention = 288
	// DefaultParentPreservation is how many blocks the parents of an
	// unmined transaction are preserved for.
	DefaultParentPreservation = 1440
	// DefaultMaxTxSizeInStore is the size above which a transaction's bytes
	// go to the external blob store.
	DefaultMaxTxSizeInStore = 1 << 20
	// ReassignmentDelay is how many blocks after a reassignment the new
	// UTXO becomes spendable.
	ReassignmentDelay = 1000
)

// MinBlockHeightRetention is the least block height retention: the set
// statistics' worker may leave a block's change unworked for up to three
// blocks, and after a crash it reads the outputs that block spent back
// from the store (see the stats worker), so they must outlive it by that
// much.
const MinBlockHeightRetention = 4

// Options configure a store. The zero value gives the defaults.
type Options struct {
	// Network names the chain ("mainnet", "testnet", ...). A store refuses
	// to open data of another network.
	Network string
	// UtxoBatchSize is the number of outputs one record holds.
	UtxoBatchSize int
	// BlockHeightRetention: see DefaultBlockHeightRetention. It is at
	// least MinBlockHeightRetention, and at least UnminedRetention and
	// half of itself (what the defaults give):
	// a mined transaction fully spent by an unmined one is scheduled for
	// deletion then, and must outlast it, or the block mining that one is
	// refused, its input's transaction gone; the half is the depth of
	// reorganisation its spender, mined late, can be disconnected from.
	BlockHeightRetention uint32
	// UnminedRetention is how many blocks an unmined transaction is kept
	// before QueryOldUnminedTransactions reports it; default half of
	// BlockHeightRetention.
	UnminedRetention uint32
	// ParentPreservation: see DefaultParentPreservation.
	ParentPreservation uint32
	// MaxTxSizeInStore: see DefaultMaxTxSizeInStore.
	MaxTxSizeInStore int
	// ExternalizeAllTransactions sends every transaction's bytes to the
	// blob store.
	ExternalizeAllTransactions bool
	// Blobs stores external transactions; required for transactions that
	// go external. Nil means a store that refuses such transactions with a
	// clear error.
	Blobs blob.Store
	// Now is the clock for createdAt and lock records (tests set it).
	Now func() time.Time
	// ReadOnly opens an existing store to read it, over an engine opened
	// read-only: Open checks the internal state without marking the store
	// open, and Close writes nothing. An engine that holds no store is
	// refused with ErrNoStore, and a store of another format, network or
	// engine with a *StateError, as without ReadOnly; writes fail with an
	// error that unwraps to engine.ErrReadOnly.
	ReadOnly bool
	// BatchWait, when positive, merges the engine writes of concurrent
	// callers: a batch closes BatchWait after its first write arrives, as
	// soon as it holds BatchOps updates (default DefaultBatchOps), or at
	// once when no other batch is at the engine (a lone caller never
	// waits), and goes to the engine as one batch, so under
	// engine.SyncAlways its callers share one fsync. Zero gives every
	// call its own engine batch, which suits one caller, engine.SyncBlock,
	// and an engine that already makes concurrent callers' writes durable
	// together (Sozu's log).
	// DefaultBatchWait is the measured setting for concurrent callers of
	// an engine whose batches cost a commit or a round trip each (Pebble,
	// Redis).
	BatchWait time.Duration
	BatchOps  int
}

func (o Options) withDefaults() Options {
	setting.Default(&o.Network, "mainnet")
	setting.Default(&o.UtxoBatchSize, record.DefaultUtxoBatchSize)
	setting.Default(&o.BlockHeightRetention, DefaultBlockHeightRetention)
	setting.Default(&o.UnminedRetention, o.BlockHeightRetention/2)
	o.BlockHeightRetention = max(o.BlockHeightRetention, o.UnminedRetention+o.BlockHeightRetention/2, MinBlockHeightRetention)
	setting.Default(&o.ParentPreservation, DefaultParentPreservation)
	setting.Default(&o.MaxTxSizeInStore, DefaultMaxTxSizeInStore)
	setting.Default(&o.Now, time.Now)
	setting.Default(&o.BatchOps, DefaultBatchOps)
	return o
}

// CreateOption modifies Create.
type CreateOption func(*CreateOptions)

// CreateOptions is what the CreateOption functions set. A caller that sends
// options elsewhere (the gRPC client) reads them with NewCreateOptions; the
// side that receives them passes them on with WithCreateOptions.
type CreateOptions struct {
	MinedBlocks []model.MinedBlockInfo
	Coinbase    *bool // nil: detected from the transaction
	Frozen      bool
	Conflicting bool
	Locked      bool
	Fee         uint64
}

// NewCreateOptions returns the options opts set.
func NewCreateOptions(opts ...CreateOption) CreateOptions { return applyOptions(opts) }

// WithCreateOptions sets every option to o's.
func WithCreateOptions(o CreateOptions) CreateOption {
	return func(to *CreateOptions) { *to = o }
}

// WithMinedBlockInfo creates the transaction as already mined in blocks.
func WithMinedBlockInfo(blocks ...model.MinedBlockInfo) CreateOption {
	return func(o *CreateOptions) { o.MinedBlocks = append(o.MinedBlocks, blocks...) }
}

// WithCoinbase overrides coinbase detection.
func WithCoinbase(coinbase bool) CreateOption {
	return func(o *CreateOptions) { o.Coinbase = &coinbase }
}

// WithFrozen creates the transaction with every output frozen.
func WithFrozen() CreateOption { return func(o *CreateOptions) { o.Frozen = true } }

// WithConflicting creates the transaction as conflicting (scheduled for
// deletion) and records it among its parents' conflictingChildren.
func WithConflicting() CreateOption { return func(o *CreateOptions) { o.Conflicting = true } }

// WithLocked creates the transaction locked (Created & Locked state).
func WithLocked() CreateOption { return func(o *CreateOptions) { o.Locked = true } }

// WithFee records the transaction's fee, when the caller knows it.
func WithFee(fee uint64) CreateOption { return func(o *CreateOptions) { o.Fee = fee } }

// SpendOption modifies Spend.
type SpendOption func(*SpendOptions)

// SpendOptions is what the SpendOption functions set; NewSpendOptions and
// WithSpendOptions carry them across a connection as for CreateOptions.
type SpendOptions struct {
	// BlockHeight is the height maturity and frozen-until are judged
	// against; 0 means the store's height + 1.
	BlockHeight       uint32
	IgnoreConflicting bool
	IgnoreLocked      bool
	PreviousOutputs   []*wire.TxOut
}

// NewSpendOptions returns the options opts set.
func NewSpendOptions(opts ...SpendOption) SpendOptions { return applyOptions(opts) }

// applyOptions applies opts, in order, to the zero options.
func applyOptions[T any, Option ~func(*T)](opts []Option) T {
	var o T
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithSpendOptions sets every option to o's.
func WithSpendOptions(o SpendOptions) SpendOption {
	return func(to *SpendOptions) { *to = o }
}

// WithBlockHeight judges maturity and frozen-until against height instead of
// the store's height + 1.
func WithBlockHeight(height uint32) SpendOption {
	return func(o *SpendOptions) { o.BlockHeight = height }
}

// IgnoreConflicting spends outputs of conflicting transactions.
func IgnoreConflicting() SpendOption { return func(o *SpendOptions) { o.IgnoreConflicting = true } }

// IgnoreLocked spends outputs of locked transactions.
func IgnoreLocked() SpendOption { return func(o *SpendOptions) { o.IgnoreLocked = true } }

// WithPreviousOutputs gives, per input, the output the spender claims to
// spend (as an Extended Format transaction carries it); Spend then checks
// each claim against the stored UTXO hash.
func WithPreviousOutputs(outs []*wire.TxOut) SpendOption {
	return func(o *SpendOptions) { o.PreviousOutputs = outs }
}
