package utxo

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/model"
)

// DB is the store: the Store interface implemented over one engine.
type DB struct {
	eng  engine.Engine
	opts Options

	// chainMu serialises the writers of the chain state: ConnectBlock,
	// DisconnectBlock and SetBlockHeight.
	chainMu    sync.Mutex
	height     atomic.Uint32
	medianTime atomic.Uint32
	closed     atomic.Bool
	faults     faults
	txCache    txCache
	batcher    *batcher // nil: every call is its own engine batch
	// changes counts the engine calls that may have written; see Changes.
	changes atomic.Uint64
	// heightAware is the engine, when it cleans up by itself at a height.
	heightAware engine.HeightAware
	// stats works out the blocks' changes to the set's statistics; nil in
	// a store opened read-only.
	stats *statsWorker

	// UncleanShutdown reports that the previous run did not close the
	// store; the engine recovered its log, and multi-record creates left
	// half done complete on their next create, get or set-mined.
	UncleanShutdown bool
}

var _ Store = (*DB)(nil)

// Metadata keys of the store (besides the internal state).
const (
	metaMedianTime = "medianTime"
)

// Open opens the store over eng after checking the engine's internal state
// (format version, network, engine, clean shutdown). The store owns eng and
// closes it on Close.
func Open(ctx context.Context, eng engine.Engine, opts Options) (*DB, error) {
	opts = opts.withDefaults()
	unclean, err := checkInternalState(ctx, eng, opts.Network, opts.ReadOnly)
	if err != nil {
		return nil, err
	}
	db := &DB{opts: opts, UncleanShutdown: unclean, txCache: newTxCache()}
	db.eng = changeCounting{Engine: eng, changes: &db.changes}
	db.heightAware, _ = eng.(engine.HeightAware)
	if opts.BatchWait > 0 {
		db.batcher = &batcher{eng: db.eng, maxOps: opts.BatchOps, wait: opts.BatchWait}
	}
	cs, err := db.loadChainState(ctx)
	if err != nil {
		return nil, err
	}
	db.height.Store(cs.Height)
	v, err := eng.GetMeta(ctx, metaMedianTime)
	if err != nil {
		return nil, storageErr("reading "+metaMedianTime, err)
	}
	if len(v) == 4 {
		db.medianTime.Store(binary.BigEndian.Uint32(v))
	}
	if !opts.ReadOnly {
		db.stats = newStatsWorker(db)
		if err := db.resumeStats(ctx, cs); err != nil {
			db.stats.stop()
			return nil, err
		}
	}
	return db, nil
}

// Engine returns the engine the store runs on, as the store uses it:
// writes made through it count in Changes.
func (db *DB) Engine() engine.Engine { return db.eng }

// Options returns the store's effective options.
func (db *DB) Options() Options { return db.opts }

// Health implements Store.
func (db *DB) Health(ctx context.Context) error {
	if db.closed.Load() {
		return engine.ErrClosed
	}
	_, err := db.eng.GetMeta(ctx, metaInternalState)
	return err
}

// Close checkpoints the engine, records a clean shutdown and closes it;
// a store opened read-only only closes the engine.
func (db *DB) Close() error {
	if db.closed.Swap(true) {
		return engine.ErrClosed
	}
	if db.opts.ReadOnly {
		return db.eng.Close()
	}
	ctx := context.Background()
	db.chainMu.Lock()
	statsErr := db.commitStats(ctx) // a failure leaves the blocks pending for the next Open
	db.chainMu.Unlock()
	db.stats.stop()
	err := errors.Join(
		statsErr,
		markClosed(ctx, db.eng, db.opts.Network),
		db.eng.Checkpoint(ctx, db.height.Load()),
	)
	return errors.Join(err, db.eng.Close())
}

// SetBlockHeight implements Store. The height is kept in the chain state,
// beside the tip that the block processor writes, and reaching it runs
// what it makes due, as a connected block's does (advanceHeight): a
// client that drives the height itself, as Teranode's block assembly
// does, gets its spent and old unmined transactions deleted on every
// engine. The blocks whose set statistics are pending are first folded
// into the chain state, durably, as the prune may delete the outputs they
// spent, which the worker reads back from the store after a crash. Like a
// connected block's end, it is a block boundary (Checkpoint): under
// SyncBlock, such a client's writes are durable when it returns.
func (db *DB) SetBlockHeight(ctx context.Context, height uint32) error {
	db.chainMu.Lock()
	defer db.chainMu.Unlock()
	if err := db.commitStats(ctx); err != nil {
		return err
	}
	cs, err := db.loadChainState(ctx)
	if err != nil {
		return err
	}
	if err := db.advanceHeight(engine.DeferSync(ctx), height); err != nil {
		return err
	}
	cs.Height = height
	if err := db.saveChainState(ctx, cs); err != nil {
		return err
	}
	return storageErr("checkpoint", db.eng.Checkpoint(ctx, height))
}

// advanceHeight makes height the store's and runs what it makes due: the
// preservations that expire, the cleanup of old unmined transactions and
// the prune of records due for deletion. Their writes go with ctx; the
// caller's next durable write, the chain state with the height, makes
// them durable. The engine learns the height only after the prune: an
// engine that purges by itself (engine.HeightAware) may hard-delete a
// record due at it from then on, at any write, and a mined transaction it
// took first would be missing from its parents' deleted children, so a
// block spending its outputs' parents again would be taken for one
// freeing a spend never created.
func (db *DB) advanceHeight(ctx context.Context, height uint32) error {
	db.height.Store(height)
	if err := db.ProcessExpiredPreservations(ctx, height); err != nil {
		return err
	}
	if _, err := db.CleanupOldUnmined(ctx, height); err != nil {
		return err
	}
	if _, err := db.Prune(ctx, height); err != nil {
		return err
	}
	return db.passHeight(ctx, height)
}

// passHeight tells an engine that cleans up by itself the longest chain's
// height, from which on it may purge the records due at it.
func (db *DB) passHeight(ctx context.Context, height uint32) error {
	if db.heightAware == nil {
		return nil
	}
	return storageErr("passing the height to the engine", db.heightAware.SetHeight(ctx, height))
}

// GetBlockHeight implements Store.
func (db *DB) GetBlockHeight() uint32 { return db.height.Load() }

// SetMedianBlockTime implements Store.
func (db *DB) SetMedianBlockTime(ctx context.Context, t uint32) error {
	if err := db.eng.PutMeta(ctx, metaMedianTime, binary.BigEndian.AppendUint32(nil, t)); err != nil {
		return storageErr("storing the median block time", err)
	}
	db.medianTime.Store(t)
	return nil
}

// GetMedianBlockTime implements Store.
func (db *DB) GetMedianBlockTime() uint32 { return db.medianTime.Load() }

// storageErr wraps an engine failure as a STORAGE_ERROR that still
// unwraps to the engine's error (errors.Is(err, engine.ErrClosed) works).
func storageErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", model.NewError(model.CodeStorageError, chainhash.Hash{}, 0, "%s", what), err)
}

// notFound is the TX_NOT_FOUND error for txid.
func notFound(txid chainhash.Hash) error {
	return model.NewError(model.CodeTxNotFound, txid, 0, "transaction not in the store")
}

// CopyTo copies the store's records, as they stand at one moment, into
// the new directory dir while the store serves (engine.CopyStore): a
// backup. An engine that cannot copy is refused with a
// *engine.CannotCopyError. The blobs are not copied: they are the blob
// store's files.
func (db *DB) CopyTo(ctx context.Context, dir string) error {
	return engine.CopyStore(ctx, db.eng.(changeCounting).Engine, dir) // Open's wrapper, which copies nothing
}
