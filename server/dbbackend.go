package server

import (
	"context"

	"github.com/utxostore/utxostore/blockbook"
	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/electrum"
	"github.com/utxostore/utxostore/utxo"
)

var _ Backend = (*dbBackend)(nil)

// dbBackend serves the store of a block path, which every connected block
// goes through.
type dbBackend struct {
	*utxo.DB
	path *blockpath.Path
}

// NewBackend serves the store that path feeds, and the address index and
// the block store it keeps.
func NewBackend(path *blockpath.Path) Backend {
	return &dbBackend{DB: path.Store(), path: path}
}

// ConnectBlock implements Backend: the block takes the path (see package
// blockpath), which checks it and orders the work.
func (b *dbBackend) ConnectBlock(ctx context.Context, blk *chain.Block, height uint32) error {
	return b.path.Connect(ctx, blk, height)
}

// NextHeight implements Backend.
func (b *dbBackend) NextHeight(ctx context.Context) (uint32, error) { return b.path.Next(ctx) }

// Levels implements Backend.
func (b *dbBackend) Levels(ctx context.Context) (blockpath.Levels, error) { return b.path.Levels(ctx) }

// AddressIndex implements Backend.
func (b *dbBackend) AddressIndex() blockbook.AddressIndexReads {
	if ix := b.path.Index(); ix != nil {
		return ix
	}
	return nil // not a nil *index.Index: the API tests for an index with == nil
}

// BlockStore implements Backend. The API serves blocks and transactions
// from the block store together with the index only: a follower without
// it keeps just the blocks of its rollback window.
func (b *dbBackend) BlockStore() blockbook.BlockStoreReads {
	if b.path.Index() == nil || b.path.Blocks() == nil {
		return nil
	}
	return b.path.Blocks()
}

// Scripts implements Backend: the index's Electrum columns, when the
// index holds them for every block (serve refuses --electrum otherwise).
func (b *dbBackend) Scripts() electrum.ScriptReads {
	if ix := b.path.Index(); ix != nil && ix.HasElectrum() {
		return ix
	}
	return nil
}
