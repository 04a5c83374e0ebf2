// Package server is the utxostore daemon: a gRPC service for every store
// operation, an HTTP/JSON query API in Blockbook's REST shape, Prometheus
// metrics and health endpoints, over one store.
package server

import (
	"context"

	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/blockstore"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/utxo"
)

// Backend is what the daemon serves: the Store plus the block processor and
// the chain-level reads that *utxo.DB provides. It is an interface so the
// instrumented decorator can wrap every method.
type Backend interface {
	utxo.Store
	// ConnectBlock carries a block at height along the block path: it is
	// checked, kept, connected and indexed (package blockpath).
	ConnectBlock(ctx context.Context, b *chain.Block, height uint32) error
	// NextHeight is the first height whose block the path needs: a
	// resuming client sends from there (blockpath.Path.Next).
	NextHeight(ctx context.Context) (uint32, error)
	// Levels are the tips of the store, the index and the block store.
	Levels(ctx context.Context) (blockpath.Levels, error)
	Tip(ctx context.Context) (utxo.Tip, bool, error)
	// ChainSummary is the tip and the counts of blocks and transactions,
	// read from the chain state; Summary walks every record.
	ChainSummary(ctx context.Context) (utxo.ChainSummary, error)
	Summary(ctx context.Context) (utxo.Summary, error)
	// SetStats are the UTXO set's statistics as Bitcoin Core reports
	// them, kept in the chain state (no walk).
	SetStats(ctx context.Context) (coinstats.Summary, error)
	// Changes counts the writes made to the store since it was opened,
	// the daemon's and its follower's alike (utxo.DB.Changes).
	Changes() uint64
	// BlockAt returns what the store remembers of the block at height.
	BlockAt(ctx context.Context, height uint32) (BlockMeta, bool, error)
	// AddressIndex is the Blockbook address index fed by ConnectBlock, or
	// nil when it is off.
	AddressIndex() *index.Index
	// BlockStore holds the raw blocks connected, or is nil when off.
	BlockStore() *blockstore.Store
}

// BlockMeta is what the store keeps about a connected block.
type BlockMeta = utxo.BlockInfo

var _ Backend = (*dbBackend)(nil)
