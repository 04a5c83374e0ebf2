package server

import (
	"context"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/index"

	"github.com/utxostore/utxostore/utxo"
)

// dbBackend adapts *utxo.DB to Backend.
type dbBackend struct {
	*utxo.DB
	idx *index.Index
}

// NewBackend serves db; idx, when not nil, is the address index that every
// connected block also feeds.
func NewBackend(db *utxo.DB, idx *index.Index) Backend { return dbBackend{db, idx} }

// AddressIndex implements Backend.
func (b dbBackend) AddressIndex() *index.Index { return b.idx }

// ConnectBlock connects the block to the store and then to the address
// index. The store goes first: after a crash between the two, the index is
// behind and catches up when the block is sent again (a block the store
// already holds is refused as not extending its tip, so the import resumes
// from the store's tip and IndexBlock fills the gap from the files).
func (b dbBackend) ConnectBlock(ctx context.Context, blk utxo.Block) error {
	if err := b.DB.ConnectBlock(ctx, blk); err != nil {
		return err
	}
	return IndexBlock(b.idx, blk)
}

// IndexBlock feeds blk to the address index unless it is off or already
// holds that height.
func IndexBlock(idx *index.Index, blk utxo.Block) error {
	if idx == nil {
		return nil
	}
	if best, ok, err := idx.BestBlock(); err != nil {
		return err
	} else if ok && best.Height >= blk.Height {
		return nil
	}
	return idx.ConnectBlock(IndexedForm(blk))
}

// IndexedForm is blk in the address index's chain-agnostic form.
func IndexedForm(blk utxo.Block) *index.Block {
	msgs := make([]*wire.MsgTx, len(blk.Txs))
	ids := make([]chainhash.Hash, len(blk.Txs))
	for i, tx := range blk.Txs {
		msgs[i], ids[i] = tx.Msg, tx.ID
	}
	header := blk.Header
	if header == nil {
		header = &wire.BlockHeader{PrevBlock: blk.PrevHash}
	}
	ib := index.FromWire(blk.Height, header, blk.Size, msgs, ids)
	ib.Hash = blk.Hash // the caller's hash, also when it came without a header
	return ib
}

// BlockAt implements Backend.
func (b dbBackend) BlockAt(ctx context.Context, height uint32) (BlockMeta, bool, error) {
	return b.DB.BlockAt(ctx, height)
}
