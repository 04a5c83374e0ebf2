package follow

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/blockstore"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo"
)

// keep puts a block of the peer's chain in the block store before the
// store connects it, so a crash never leaves the store's tip without its
// raw block. A block store that ends below the block cannot take it: the
// store was fed without it.
func (f *Follower) keep(height uint32, b *chain.Block) error {
	err := f.cfg.Blocks.Put(height, b.Hash, b.Raw)
	if errors.Is(err, blockstore.ErrNotNext) {
		return fatal(fmt.Errorf("keeping block %s at height %d: %w; the store was fed blocks the block store did not get: move the block store aside (with --index: rebuild the index and the blocks with import --index)", b.Hash, height, err))
	}
	if err != nil {
		return fatal(fmt.Errorf("keeping block %s at height %d: %w", b.Hash, height, err))
	}
	return nil
}

// kept returns the store's block at height, with hash, from the block
// store; ok is false when the block store does not hold it (pruned, never
// kept, or replaced there by another branch's block).
func (f *Follower) kept(height uint32, hash chainhash.Hash) (b utxo.Block, ok bool, err error) {
	raw, held, ok, err := f.cfg.Blocks.Block(height)
	if err != nil || !ok || held != hash {
		return utxo.Block{}, false, err
	}
	parsed, err := chain.ParseBlock(raw)
	if err != nil {
		return utxo.Block{}, false, fmt.Errorf("the block store's block %s at height %d: %w", hash, height, err)
	}
	return utxo.BlockFromChain(parsed, height), true, nil
}

// MigrateKeptBlocks moves the blocks of the rollback window from dir, the
// directory of one file per block (HEIGHT-HASH.blk) where followers kept
// them before the block store did, into blocks: those on the store's
// chain that fit there, lowest first. Then it removes dir. A missing dir
// is nothing to do.
func MigrateKeptBlocks(ctx context.Context, dir string, store *utxo.DB, blocks *blockstore.Store) (moved int, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.blk"))
	if err != nil || len(files) == 0 {
		if _, statErr := os.Stat(dir); statErr == nil && err == nil {
			return 0, os.RemoveAll(dir)
		}
		return 0, err
	}
	sort.Strings(files) // the height leads the name, zero-padded
	for _, file := range files {
		var height uint32
		var hashText string
		if _, err := fmt.Sscanf(filepath.Base(file), "%010d-%64s", &height, &hashText); err != nil {
			continue
		}
		info, onChain, err := store.BlockAt(ctx, height)
		if err != nil {
			return moved, err
		}
		if !onChain || info.Hash.String() != hashText {
			continue // another branch's, or above the store's tip
		}
		raw, err := os.ReadFile(file)
		if err != nil {
			return moved, err
		}
		err = blocks.Put(height, info.Hash, raw)
		if errors.Is(err, blockstore.ErrNotNext) {
			continue // below the block store's window, or past a gap
		}
		if err != nil {
			return moved, err
		}
		moved++
	}
	return moved, os.RemoveAll(dir)
}
