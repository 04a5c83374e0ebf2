package index

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/utxostore/utxostore/internal/setting"
)

// DefaultRollbackBlocks is Blockbook's default number of blocks kept in
// blockTxs.
const DefaultRollbackBlocks = 300

// DefaultCacheSize is the index's block cache when Options.CacheSize is
// zero. Indexing a block reads the balance of every address it pays or
// spends from, and most of those reads are of keys that do not exist yet
// (a new address), which the tables' bloom filters answer: the cache is
// sized so that the filters and index blocks of a chain's index stay in
// it beside the blocks being read, rather than being read back from the
// files on every other lookup.
const DefaultCacheSize = 256 << 20

// Options configure Open.
type Options struct {
	// Coin names the chain, as Blockbook's "coin" (e.g. "Bitcoin"). Required;
	// an existing index for another coin is refused.
	Coin string
	// RollbackBlocks is how many recent blocks can be disconnected.
	// Zero means DefaultRollbackBlocks.
	RollbackBlocks int
	// NoSync commits block batches without waiting for fsync. A crash may
	// then lose the last blocks, but never leaves a partial block. A table
	// of a large bulk flush is synced either way: Pebble takes in only
	// synced tables.
	NoSync bool
	// RefuseUnclean makes Open refuse an index whose dbState was left open.
	RefuseUnclean bool
	// CacheSize is the Pebble block cache in bytes (zero:
	// DefaultCacheSize). The index's memory is this cache, two memtables
	// of 64 MiB at most, and, during a bulk import, the values the import
	// keeps (see Bulk).
	CacheSize int64
	// Pebble overrides the Pebble options (nil: defaults, quiet logger);
	// CacheSize is then unused.
	Pebble *pebble.Options
}

// Index is an open address index. Its methods are safe for concurrent use:
// queries share, writes are exclusive.
type Index struct {
	mu  sync.RWMutex
	dir string
	db  *pebble.DB
	// pebbleOpts are the options db was opened with, Pebble's defaults
	// filled in: a bulk flush writes its tables with them.
	pebbleOpts *pebble.Options
	// ingestedBytes are the keys and values bulk flushes handed to Pebble
	// as tables since Open (Footprint).
	ingestedBytes uint64
	opts          Options
	wo            *pebble.WriteOptions
	state         *internalState
	unclean       bool

	hasTip bool
	tip    uint32
	win    window // heights held in blockTxs

	bulk *Bulk // non-nil while a bulk import owns the index
	// electrum is true when the Electrum columns cover every block
	// (electrum.go).
	electrum bool
}

// Open opens or creates the index in dir, checks its internal state and
// marks it open.
func Open(dir string, opts Options) (*Index, error) {
	if opts.Coin == "" {
		return nil, errors.New("index: Options.Coin is required")
	}
	if opts.CacheSize < 0 {
		return nil, fmt.Errorf("index: Options.CacheSize is %d bytes; it cannot be negative", opts.CacheSize)
	}
	setting.Default(&opts.RollbackBlocks, DefaultRollbackBlocks)
	setting.Default(&opts.CacheSize, DefaultCacheSize)
	po := opts.Pebble
	if po == nil {
		po = defaultPebbleOptions(opts.CacheSize)
		defer po.Cache.Unref()
	}
	db, err := pebble.Open(dir, po)
	if err != nil {
		return nil, fmt.Errorf("index: open %s: %w", dir, err)
	}
	// Tables a bulk flush left when the process stopped before Pebble
	// took them in hold no block the index has.
	left, err := filepath.Glob(filepath.Join(dir, ingestFileGlob))
	if err == nil {
		err = removeTables(left)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("index: removing a bulk flush's unused tables: %w", err), db.Close())
	}
	ix := &Index{dir: dir, db: db, pebbleOpts: po.Clone().EnsureDefaults(), opts: opts, wo: pebble.Sync}
	if opts.NoSync {
		ix.wo = pebble.NoSync
	}
	if err := ix.loadState(); err != nil {
		db.Close()
		return nil, err
	}
	return ix, nil
}

func (ix *Index) loadState() error {
	val, err := ix.get(cfDefault, []byte(internalStateKey))
	if err != nil {
		return err
	}
	if val == nil {
		ix.state = newInternalState(ix.opts.Coin)
	} else {
		if ix.state, err = unpackInternalState(val); err != nil {
			return err
		}
		if err := ix.state.check(ix.dir, ix.opts.Coin, ix.opts.RefuseUnclean); err != nil {
			return err
		}
		ix.unclean = ix.state.DbState == dbStateOpen
	}
	if err := ix.loadTip(); err != nil {
		return err
	}
	if err := ix.loadWindow(); err != nil {
		return err
	}
	if err := ix.loadElectrum(); err != nil {
		return err
	}
	ix.state.DbState = dbStateOpen
	return ix.storeState()
}

// loadTip finds the highest height key; that block is the tip.
func (ix *Index) loadTip() error {
	lo, hi := cfHeight.bounds()
	it, err := ix.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	defer it.Close()
	if it.Last() {
		bi, err := unpackBlockInfo(it.Key()[1:], it.Value())
		if err != nil {
			return err
		}
		ix.hasTip, ix.tip = true, bi.Height
	}
	return it.Error()
}

// loadWindow finds the lowest height held in blockTxs.
func (ix *Index) loadWindow() error {
	lo, hi := cfBlockTxs.bounds()
	it, err := ix.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	defer it.Close()
	if it.First() {
		if len(it.Key()) != 5 {
			return corrupt(cfBlockTxs, it.Key()[1:], "key of %d bytes, want 4", len(it.Key())-1)
		}
		ix.win = window{any: true, low: (&decoder{buf: it.Key()[1:]}).uint32be()}
	}
	return it.Error()
}

func (ix *Index) storeState() error {
	ix.state.BestHeight = ix.tip
	val, err := ix.state.pack()
	if err != nil {
		return err
	}
	return ix.db.Set(cfDefault.key([]byte(internalStateKey)), val, pebble.Sync)
}

// UncleanShutdown reports whether Open found the index not closed, as
// Blockbook warns "database was left in open state". The data is still at
// a block boundary because every write is atomic.
func (ix *Index) UncleanShutdown() bool { return ix.unclean }

// MarkInconsistent records dbState inconsistent, for a caller that knows
// the index no longer matches the chain; Open will then refuse it.
func (ix *Index) MarkInconsistent() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.db == nil {
		return ErrClosed
	}
	ix.state.DbState = dbStateInconsistent
	return ix.storeState()
}

// Close flushes an open bulk import, records dbState closed and closes
// the database.
func (ix *Index) Close() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.db == nil {
		return ErrClosed
	}
	var err error
	if ix.bulk != nil {
		err = ix.bulk.finish()
	}
	if err == nil && ix.state.DbState == dbStateOpen {
		ix.state.DbState = dbStateClosed
		err = ix.storeState()
	}
	if cerr := ix.db.Close(); err == nil {
		err = cerr
	}
	ix.db = nil
	return err
}

// get returns a copy of the value, or nil when the key is absent.
func (ix *Index) get(c column, key []byte) ([]byte, error) {
	val, closer, err := ix.db.Get(c.key(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("index: read %s: %w", c, err)
	}
	defer closer.Close()
	return append(make([]byte, 0, len(val)), val...), nil
}

// defaultPebbleOptions follow Blockbook's RocksDB tuning where it matters
// here: most reads are point lookups of keys that often do not exist yet
// (a new address, a new txid), which a bloom filter answers without
// reading table blocks, so every level gets one (10 bits per key, as
// Blockbook). The index is written in large pieces (a bulk import's table,
// every thousand blocks), so level 0 may hold twice Pebble's default of
// files before it is compacted, and level 1 512 MiB: fewer, larger
// compactions, which write less (write-amp 2.9, not 3.2, on the 1M
// benchmark) and take less of the processors the blocks need. The caller
// must Unref the cache after Open.
func defaultPebbleOptions(cacheSize int64) *pebble.Options {
	o := &pebble.Options{
		Logger:                quietLogger{},
		Cache:                 pebble.NewCache(cacheSize),
		MemTableSize:          64 << 20,
		L0CompactionThreshold: 8,
		L0StopWritesThreshold: 32,
		LBaseMaxBytes:         512 << 20,
		Levels:                make([]pebble.LevelOptions, 7),
	}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	return o
}

// quietLogger keeps Pebble's informational chatter out of the caller's
// output; fatal errors still stop the process as Pebble expects.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	pebble.DefaultLogger.Fatalf(format, args...)
}

// CopyTo copies the index, as it stands, into the new directory dir with
// a pebble checkpoint (its write-ahead log flushed first), while queries
// go on: blocks are indexed one atomic batch each, so the copy holds whole
// blocks. Its dbState says open, as an index a crash left at a block
// boundary does (UncleanShutdown), which Open takes. A bulk import, whose
// blocks wait in memory, is refused with ErrBulkActive.
func (ix *Index) CopyTo(dir string) error {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	switch {
	case ix.db == nil:
		return ErrClosed
	case ix.bulk != nil:
		return ErrBulkActive
	}
	if err := ix.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("index: copying to %s: %w", dir, err)
	}
	return nil
}
