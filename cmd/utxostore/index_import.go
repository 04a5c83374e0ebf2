package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/utxostore/utxostore/blockstore"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/server"
	"github.com/utxostore/utxostore/utxo"
)

// importIndex feeds imported blocks to the address index in its bulk mode
// (balances and tx addresses kept in memory, flushed every flushEvery
// blocks and at the end) and to the block store. A nil *importIndex is
// "no index".
type importIndex struct {
	idx        *index.Index
	bulk       *index.Bulk
	next       uint32 // the first height the index does not hold
	blocks     *blockstore.Store
	blocksNext uint32 // the first height the block store does not hold
}

// flushEvery bounds what an interrupted import re-indexes.
const flushEvery = 1000

// openImportIndex opens the index for an import whose files start at
// height start. An index behind the store (a crash between the store's
// write and the index's) catches up from the files, so they must start
// where it lacks blocks; an index of another chain is refused.
func openImportIndex(ctx context.Context, sf *storeFlags, store *utxo.DB, start uint32) (*importIndex, error) {
	idx, err := sf.openIndex()
	if err != nil || idx == nil {
		return nil, err
	}
	next, behind, err := server.IndexLag(ctx, store, idx)
	if err == nil && behind && start > next {
		err = fmt.Errorf("the address index lacks the store's blocks from height %d on, and the files start at height %d: "+
			"import files that hold block %d on (--start-height %d or lower) to index them", next, start, next, next)
	}
	if err != nil {
		idx.Close()
		return nil, err
	}
	ii := &importIndex{idx: idx}
	if best, ok, err := idx.BestBlock(); err != nil {
		idx.Close()
		return nil, err
	} else if ok {
		ii.next = best.Height + 1
	}
	if ii.blocks, err = sf.openBlocks(); err != nil {
		idx.Close()
		return nil, err
	}
	// An empty block store (a directory indexed before it existed) takes
	// every block of the files again.
	if tip, ok := ii.blocks.Tip(); ok {
		ii.blocksNext = tip + 1
	}
	if ii.bulk, err = idx.BeginBulk(flushEvery); err != nil {
		idx.Close()
		ii.blocks.Close()
		return nil, err
	}
	return ii, nil
}

// needs reports whether the index or the block store lacks the block at
// height.
func (ii *importIndex) needs(height uint32) bool {
	return ii != nil && (height >= ii.next || height >= ii.blocksNext)
}

func (ii *importIndex) connect(b utxo.Block) error {
	if ii == nil {
		return nil
	}
	if b.Height >= ii.next {
		if err := ii.bulk.Connect(server.IndexedForm(b)); err != nil {
			return err
		}
		ii.next = b.Height + 1
	}
	if b.Height >= ii.blocksNext {
		if err := server.StoreBlock(ii.blocks, b); err != nil {
			return err
		}
		ii.blocksNext = b.Height + 1
	}
	return nil
}

// close flushes what the bulk holds (also after an error or an
// interruption, so the next import resumes from there) and closes.
func (ii *importIndex) close() error {
	if ii == nil {
		return nil
	}
	return errors.Join(ii.bulk.Close(), ii.idx.Close(), ii.blocks.Close())
}
