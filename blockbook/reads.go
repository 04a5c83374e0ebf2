package blockbook

import (
	"context"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/utxo"
)

// Reads are the reads the API makes: of the store, and of the address
// index and the block store when they are kept. The daemon's backend
// implements it and counts each read in its metrics.
type Reads interface {
	StoreReads
	// AddressIndex is the Blockbook address index, or nil when it is off
	// (serve without --index): addresses, xpubs and spent transactions
	// are then not served.
	AddressIndex() AddressIndexReads
	// BlockStore holds the raw blocks the API serves blocks and
	// transactions from, or is nil when it is not served (it is, with
	// the address index).
	BlockStore() BlockStoreReads
}

// StoreReads are the API's reads of the UTXO store (utxo.DB) and of the
// block path that feeds it.
type StoreReads interface {
	Get(ctx context.Context, txid chainhash.Hash, fields ...utxo.Field) (*utxo.Meta, error)
	BatchDecorate(ctx context.Context, items []*utxo.UnresolvedMetaData, fields ...utxo.Field) error
	PreviousOutputsDecorate(ctx context.Context, tx *chain.Tx) ([]*wire.TxOut, error)
	// GetUnminedTxIterator lists the transactions no block holds yet:
	// what Blockbook calls the mempool.
	GetUnminedTxIterator(ctx context.Context) (utxo.UnminedTxIterator, error)
	// Changes counts the writes made to the store: the mempool is listed
	// again for the websocket's pushes when it moves.
	Changes() uint64
	GetBlockHeight() uint32
	GetMedianBlockTime() uint32
	Tip(ctx context.Context) (utxo.Tip, bool, error)
	// BlockAt returns what the store remembers of the block at height.
	BlockAt(ctx context.Context, height uint32) (utxo.BlockInfo, bool, error)
	// ChainSummary is the tip and the counts of blocks and transactions,
	// read from the chain state; Summary walks every record (the daemon
	// answers it from a cache while the store is unchanged).
	ChainSummary(ctx context.Context) (utxo.ChainSummary, error)
	Summary(ctx context.Context) (utxo.Summary, error)
	// SetStats are the UTXO set's statistics as Bitcoin Core reports
	// them, kept in the chain state (no walk).
	SetStats(ctx context.Context) (coinstats.Summary, error)
	// Levels are the tips of the store, the index and the block store.
	Levels(ctx context.Context) (blockpath.Levels, error)
	// NextHeight is the first height whose block the block path needs
	// (blockpath.Path.Next).
	NextHeight(ctx context.Context) (uint32, error)
}

// AddressIndexReads are the API's reads of the address index
// (index.Index).
type AddressIndexReads interface {
	Balance(addrDesc []byte) (index.Balance, error)
	UTXOs(addrDesc []byte) ([]index.Utxo, error)
	History(ctx context.Context, addrDesc []byte, page, pageSize int, fromHeight, toHeight uint32) (*index.History, error)
	WalkHistory(ctx context.Context, addrDesc []byte, fromHeight, toHeight uint32, fn func(index.HistoryTx) (stop bool, err error)) error
	TxAddresses(txid chainhash.Hash) (index.TxAddresses, bool, error)
	BestBlock() (index.BlockInfo, bool, error)
	BlockInfo(height uint32) (index.BlockInfo, bool, error)
}

// BlockStoreReads are the API's reads of the block store
// (blockstore.Store).
type BlockStoreReads interface {
	Block(height uint32) (raw []byte, hash chainhash.Hash, ok bool, err error)
	HeightOf(hash chainhash.Hash) (height uint32, ok bool, err error)
	DiskBytes() (int64, error)
}
