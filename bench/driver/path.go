package driver

import (
	"context"

	"github.com/utxostore/utxostore/coinstats"

	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo"
)

// Path drives a block path (blockpath.Path) as import and the daemon feed
// it: blocks go along the path (checked, kept, stored, indexed), a
// disconnection is a reorganisation with no branch, and the transactions
// submitted between blocks go to its store, as in Store.
type Path struct{ Path *blockpath.Path }

func (p Path) store() Store { return Store{DB: p.Path.Store()} }

// Create implements Target.
func (p Path) Create(ctx context.Context, tx *chain.Tx, height uint32) error {
	return p.store().Create(ctx, tx, height)
}

// Spend implements Target.
func (p Path) Spend(ctx context.Context, tx *chain.Tx, inputs []uint32, height uint32) ([]error, error) {
	return p.store().Spend(ctx, tx, inputs, height)
}

// Connect implements Target.
func (p Path) Connect(ctx context.Context, b *utxo.Block) error {
	return p.Path.Connect(ctx, ChainBlock(b), b.Height)
}

// Disconnect implements Target.
func (p Path) Disconnect(ctx context.Context, b *utxo.Block) error {
	return p.Path.Reorg(ctx, []*chain.Block{ChainBlock(b)}, nil)
}

// Unspent implements Target.
func (p Path) Unspent(ctx context.Context, ops []wire.OutPoint) ([]bool, error) {
	return p.store().Unspent(ctx, ops)
}

// SetStats returns the set's statistics at the tip.
func (p Path) SetStats(ctx context.Context) (coinstats.Summary, error) {
	return p.store().SetStats(ctx)
}

// Summary implements Target.
func (p Path) Summary(ctx context.Context) (utxo.Summary, error) { return p.store().Summary(ctx) }

// ChainBlock is a stream's block (which carries its header) as a parsed
// block, the form the block path takes.
func ChainBlock(b *utxo.Block) *chain.Block {
	size := chain.HeaderSize + wire.VarIntSerializeSize(uint64(len(b.Txs)))
	for _, tx := range b.Txs {
		size += len(tx.Raw)
	}
	return &chain.Block{BlockInfo: chain.BlockInfo{Header: *b.Header, Hash: b.Hash, TxCount: uint64(len(b.Txs)), Size: int64(size)}, Txs: b.Txs}
}
