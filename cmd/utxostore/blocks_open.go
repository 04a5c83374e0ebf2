package main

import (
	"flag"
	"fmt"
	"path/filepath"

	"github.com/utxostore/utxostore/blockstore"
	"github.com/utxostore/utxostore/chain"
)

// blockFlags are the block store's settings. The block store is kept with
// the address index (--index): the API serves transactions and blocks from
// it, and addresses from the index.
type blockFlags struct {
	retention uint
}

func (f *blockFlags) register(fs *flag.FlagSet) {
	fs.UintVar(&f.retention, "block-retention", 0, "with --index, keep the raw blocks of only the newest N blocks in DATA/blocks (0: every block); older transactions are then not served")
}

// openBlockStore opens DATA/blocks; its segments carry the network's magic,
// so each is a blk*.dat file of that network. The store is open by then, so
// f.network is the store's network.
func (f *storeFlags) openBlockStore(retention uint32) (*blockstore.Store, error) {
	magic, err := chain.NetworkMagic(f.network)
	if err != nil {
		return nil, fmt.Errorf("opening the block store: %w", err)
	}
	blocks, err := blockstore.Open(filepath.Join(f.data, "blocks"), blockstore.Options{
		Magic: magic, Retention: retention, NoSync: f.sync == "block",
	})
	if err != nil {
		return nil, fmt.Errorf("opening the block store: %w", err)
	}
	return blocks, nil
}
