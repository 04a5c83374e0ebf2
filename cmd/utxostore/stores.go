package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/blockstore"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/internal/setting"
	"github.com/utxostore/utxostore/utxo"
)

// stores are a data directory's stores, open for feeding, and the block
// path that feeds them.
type stores struct {
	store  *utxo.DB
	index  *index.Index      // nil without --index
	blocks *blockstore.Store // nil when no raw block is kept
	path   *blockpath.Path
	// created is set when the command may create the store (createStore)
	// and the data directory held none: fail puts it back.
	created *newStoreDir
}

// pathSettings are what a command asks of the block path beyond the
// store flags.
type pathSettings struct {
	// trustBlocks skips the proof-of-work, genesis block and merkle root
	// checks.
	trustBlocks bool
	// followWindow, for a follower, keeps the raw blocks of its rollback
	// window even without --index: a reorganisation reads them.
	followWindow uint32
	// bulkIndex writes the index every bulkIndex blocks (an import).
	bulkIndex int
	// maxBlockSize, when set, replaces the network's block size limit.
	maxBlockSize uint64
	logger       *slog.Logger
}

// openStores opens the store in mode, then the address index and the
// block store the flags ask for, and the block path over them, which
// settles them with the store (blockpath.Open). The network and
// --index-cache are settled before anything is opened, so a bad one
// creates nothing.
func (f *storeFlags) openStores(ctx context.Context, mode openMode, ps pathSettings) (*stores, error) {
	if f.indexCache < 0 {
		return nil, usagef("--index-cache is %d bytes; it cannot be negative", f.indexCache)
	}
	if _, err := f.resolve(mode); err != nil {
		return nil, err
	}
	rules, err := chain.NetworkRules(f.network, ps.trustBlocks)
	if err != nil {
		return nil, err
	}
	if ps.maxBlockSize > 0 {
		rules.MaxBlockSize = ps.maxBlockSize
	}
	s := &stores{}
	if mode == createStore {
		s.created = noteNewStoreDir(f.data)
	}
	if s.store, err = f.open(ctx, mode); err != nil {
		return nil, err
	}
	if s.created != nil && f.madeNamespace {
		opts := f.redisOptions(engine.SyncAlways, false)
		s.created.namespace = &opts
	}
	if err := s.openDerived(ctx, f, rules, ps); err != nil {
		return nil, s.fail(ctx, err)
	}
	return s, nil
}

func (s *stores) openDerived(ctx context.Context, f *storeFlags, rules chain.BlockRules, ps pathSettings) error {
	var err error
	if s.index, err = f.openIndex(); err != nil {
		return err
	}
	switch {
	case f.index:
		s.blocks, err = f.openBlockStore(uint32(f.blocks.retention))
	case ps.followWindow > 0:
		// Nothing but a reorganisation reads them: only the window is kept.
		s.blocks, err = f.openBlockStore(ps.followWindow)
	}
	if err != nil {
		return err
	}
	cfg := blockpath.Config{Store: s.store, Rules: rules, Blocks: s.blocks, Index: s.index, IndexBulk: ps.bulkIndex, Logger: ps.logger}
	setting.Default(&cfg.Logger, f.engineLogger())
	s.path, err = blockpath.Open(ctx, cfg)
	return err
}

// close writes what the path holds and closes every store, the UTXO
// store last.
func (s *stores) close() error {
	var errs []error
	if s.path != nil {
		errs = append(errs, s.path.Close())
	}
	if s.index != nil {
		if err := s.index.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing the address index: %w", err))
		}
	}
	if s.blocks != nil {
		if err := s.blocks.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing the block store: %w", err))
		}
	}
	if s.store != nil {
		if err := s.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing the store: %w", err))
		}
	}
	return errors.Join(errs...)
}
