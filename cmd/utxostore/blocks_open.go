package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"strconv"

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
	def, _ := strconv.ParseUint(envOr("UTXOSTORE_BLOCK_RETENTION", "0"), 10, 32)
	fs.UintVar(&f.retention, "block-retention", uint(def), "with --index, keep the raw blocks of only the newest N blocks in DATA/blocks (0: every block); older transactions are then not served")
}

// openBlocks opens the block store when --index asks for the index (nil
// otherwise). Its segments carry the network's magic.
func (f *storeFlags) openBlocks() (*blockstore.Store, error) {
	if !f.index {
		return nil, nil
	}
	magic := chain.MagicMainnet
	switch f.network {
	case "testnet", "testnet3":
		magic = chain.MagicTestnet3
	case "regtest":
		magic = chain.MagicRegtest
	}
	blocks, err := blockstore.Open(filepath.Join(f.data, "blocks"), blockstore.Options{
		Magic: magic, Retention: uint32(f.blocks.retention), NoSync: f.sync == "block",
	})
	if err != nil {
		return nil, fmt.Errorf("opening the block store: %w", err)
	}
	return blocks, nil
}
