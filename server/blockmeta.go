package server

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/blockstore"
	"github.com/utxostore/utxostore/index"

	"github.com/utxostore/utxostore/utxo"
)

// dbBackend adapts *utxo.DB to Backend.
type dbBackend struct {
	*utxo.DB
	idx    *index.Index
	blocks *blockstore.Store
	// connectMu makes comparing the index with the store and connecting a
	// block one step, so that two ConnectBlock calls never both pass the
	// comparison.
	connectMu sync.Mutex
}

// NewBackend serves db; idx and blocks, when not nil, are the address
// index and the block store that every connected block also feeds.
func NewBackend(db *utxo.DB, idx *index.Index, blocks *blockstore.Store) Backend {
	return &dbBackend{DB: db, idx: idx, blocks: blocks}
}

// AddressIndex implements Backend.
func (b *dbBackend) AddressIndex() *index.Index { return b.idx }

// BlockStore implements Backend.
func (b *dbBackend) BlockStore() *blockstore.Store { return b.blocks }

// ErrIndexBehind refuses a block while the address index lacks blocks
// that the store holds.
var ErrIndexBehind = errors.New("the address index is behind the store")

// ConnectBlock connects the block to the store and then to the address
// index. The store goes first, so a crash between the two leaves the index
// behind the store. While it is behind, the daemon takes again the blocks
// the store holds, from the first one the index lacks, and only indexes
// them; any other block is refused with ErrIndexBehind, naming the height
// to send, so the gap never grows. `utxostore import --server` resumes
// from the index's tip for this.
func (b *dbBackend) ConnectBlock(ctx context.Context, blk utxo.Block) error {
	b.connectMu.Lock()
	defer b.connectMu.Unlock()
	next, behind, err := IndexLag(ctx, b.DB, b.idx)
	if err != nil {
		return err
	}
	if !behind {
		if err := b.DB.ConnectBlock(ctx, blk); err != nil {
			return err
		}
		if err := IndexBlock(b.idx, blk); err != nil {
			return err
		}
		return StoreBlock(b.blocks, blk)
	}
	if blk.Height != next {
		return fmt.Errorf("%w: block %s at height %d refused; the index lacks the store's blocks from height %d on, send those first",
			ErrIndexBehind, blk.Hash, blk.Height, next)
	}
	held, ok, err := b.DB.BlockAt(ctx, blk.Height)
	if err != nil {
		return err
	}
	if !ok || held.Hash != blk.Hash {
		return fmt.Errorf("%w: block %s at height %d is not the store's block there: it belongs to another chain",
			ErrIndexBehind, blk.Hash, blk.Height)
	}
	if err := b.idx.ConnectBlock(IndexedForm(blk)); err != nil {
		return err
	}
	return StoreBlock(b.blocks, blk)
}

// IndexLag compares the address index (nil: off) with the store: behind
// is true while the index lacks blocks that the store holds, and next is
// the first height it lacks. An index whose tip is not the store's block at
// that height belongs to another chain and is refused.
func IndexLag(ctx context.Context, db *utxo.DB, idx *index.Index) (next uint32, behind bool, err error) {
	if idx == nil {
		return 0, false, nil
	}
	tip, stored, err := db.Tip(ctx)
	if err != nil {
		return 0, false, err
	}
	best, indexed, err := idx.BestBlock()
	if err != nil {
		return 0, false, fmt.Errorf("reading the address index's tip: %w", err)
	}
	switch {
	case !stored:
		return 0, false, nil
	case !indexed:
		return 0, true, nil
	case best.Height > tip.Height:
		return best.Height + 1, false, nil // the store lost blocks since its last checkpoint; it takes them again
	}
	held, ok, err := db.BlockAt(ctx, best.Height)
	if err != nil {
		return 0, false, err
	}
	if !ok || held.Hash != best.Hash {
		return 0, false, fmt.Errorf("the address index's tip is block %s at height %d, which the store does not hold there (%s): "+
			"the index belongs to another chain; remove the index directory and import again with --index", best.Hash, best.Height, held.Hash)
	}
	return best.Height + 1, best.Height < tip.Height, nil
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
func (b *dbBackend) BlockAt(ctx context.Context, height uint32) (BlockMeta, bool, error) {
	return b.DB.BlockAt(ctx, height)
}
