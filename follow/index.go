package follow

import (
	"context"
	"fmt"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/utxo"
)

// catchUpIndex brings the address index to the store's tip before
// following: a crash between the store's write and the index's leaves the
// index a block or a reorganisation behind. Blocks the index holds off the
// store's chain are disconnected; the store's blocks it lacks are
// connected from the block store.
func (f *Follower) catchUpIndex(ctx context.Context) error {
	idx := f.cfg.Index
	if idx == nil {
		return nil
	}
	best, ok, err := idx.BestBlock()
	for ; ok && err == nil; best, ok, err = idx.BestBlock() {
		info, inStore, err := f.cfg.Store.BlockAt(ctx, best.Height)
		if err != nil {
			return err
		}
		if inStore && info.Hash == best.Hash {
			break
		}
		if err := idx.DisconnectBlock(best.Height, best.Hash); err != nil {
			return fmt.Errorf("address index: disconnecting block %s, which is not on the store's chain: %w", best.Hash, err)
		}
	}
	if err != nil {
		return err
	}
	next := uint32(0)
	if ok {
		next = best.Height + 1
	}
	tip, err := f.storeTip(ctx)
	if err != nil {
		return err
	}
	for h := int64(next); h <= int64(tip); h++ {
		info, _, err := f.cfg.Store.BlockAt(ctx, uint32(h))
		if err != nil {
			return err
		}
		b, ok, err := f.kept(uint32(h), info.Hash)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("the address index ends at height %d, behind the store, and the store's block %s at height %d is not kept in the block store; rebuild the index with import --index", int64(next)-1, info.Hash, h)
		}
		if err := idx.ConnectBlock(indexed(b)); err != nil {
			return fmt.Errorf("address index: connecting block %s: %w", b.Hash, err)
		}
	}
	return nil
}

// indexed is the address index's form of a block.
func indexed(b utxo.Block) *index.Block {
	msgs := make([]*wire.MsgTx, len(b.Txs))
	ids := make([]chainhash.Hash, len(b.Txs))
	for i, tx := range b.Txs {
		msgs[i], ids[i] = tx.Msg, tx.ID
	}
	ib := index.FromWire(b.Height, b.Header, b.Size, msgs, ids)
	ib.Hash = b.Hash
	return ib
}
