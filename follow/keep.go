package follow

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo"
)

// blockKeep holds the raw blocks of the rollback window, one file per
// block, so that a reorganisation can disconnect them: the store needs a
// block's transactions to undo it, and the peer may no longer serve a
// block of a branch it left. A block is kept (synced) before the store
// connects it, so a crash never leaves the store's tip without its file.
type blockKeep struct{ dir string }

func openBlockKeep(dir string) (blockKeep, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return blockKeep{}, fmt.Errorf("the directory of kept blocks: %w", err)
	}
	return blockKeep{dir: dir}, nil
}

func (k blockKeep) path(height uint32, hash chainhash.Hash) string {
	return filepath.Join(k.dir, fmt.Sprintf("%010d-%s.blk", height, hash))
}

// put writes the block through a temporary file, synced before its rename.
func (k blockKeep) put(height uint32, hash chainhash.Hash, raw []byte) error {
	final := k.path(height, hash)
	tmp, err := os.CreateTemp(k.dir, "incoming-*")
	if err != nil {
		return fmt.Errorf("keeping block %s: %w", hash, err)
	}
	_, err = tmp.Write(raw)
	if err == nil {
		err = tmp.Sync()
	}
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), final)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("keeping block %s: %w", hash, err)
	}
	return nil
}

// get reads a kept block back as the store's Block.
func (k blockKeep) get(height uint32, hash chainhash.Hash) (utxo.Block, error) {
	raw, err := os.ReadFile(k.path(height, hash))
	if err != nil {
		return utxo.Block{}, err
	}
	b, err := chain.ParseBlock(raw)
	if err != nil {
		return utxo.Block{}, fmt.Errorf("kept block %s: %w", hash, err)
	}
	return utxo.BlockFromChain(b, height), nil
}

// prune removes the blocks kept at height (every branch's).
func (k blockKeep) prune(height uint32) error {
	files, err := filepath.Glob(filepath.Join(k.dir, fmt.Sprintf("%010d-*.blk", height)))
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}
