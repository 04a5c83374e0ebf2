// Package pebble is the utxostore engine on github.com/cockroachdb/pebble:
// the embedded alternative to Sozu and the baseline every benchmark compares
// against.
//
//	e, err := pebble.Open(dir, pebble.Options{Sync: engine.SyncAlways})
//
// Records, the three secondary indexes, time-to-live entries and metadata
// are ranges of one pebble key space (see layout.go). Writers are
// serialized while they read and build their batch, and wait for the
// write-ahead log's fsync outside the lock, so concurrent callers share one
// fsync (group commit).
//
// Durability. Under SyncAlways (the default) a write returns only after
// pebble's write-ahead log, checksummed per record, is fsynced with it.
// Under SyncBlock, and for writes whose context defers its sync
// (engine.DeferSync), writes go to the log without fsync; the next synced
// write or Checkpoint syncs them with it, since one fsync covers everything
// the log holds before the record it syncs. On open pebble replays the
// log; a torn tail is cut at the last whole record and reported through
// Options.Logger ("stopped reading at offset").
// Either way a crash leaves the store at some point of the write order: a
// prefix of the writes, never a mix.
package pebble

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	pebbledb "github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/internal/fsutil"
	"github.com/utxostore/utxostore/internal/setting"
)

// Name is the engine's registered name and the owner written in its data
// directory's marker.
const Name = "pebble"

// Subdir is the directory under the data directory that holds pebble's
// files, so that the marker and pebble's own files never mix.
const Subdir = "pebble"

// Options configure Open. The zero value is the durable default.
type Options struct {
	// Sync chooses when writes become durable; SyncAlways by default.
	Sync engine.SyncMode
	// CacheSize is the block cache in bytes; 0 means 64 MiB.
	CacheSize int64
	// MemTableSize is the size of one memtable in bytes; 0 means 64 MiB.
	// Larger memtables absorb more updates of hot records before they
	// reach a level, at the cost of memory and longer WAL replay.
	MemTableSize uint64
	// BloomBitsPerKey sizes the sstable bloom filters that let a create of
	// a new key skip reading blocks; 0 means 10, negative disables them.
	BloomBitsPerKey int
	// Logger receives pebble's messages, among them the report of a torn
	// WAL tail truncated during recovery ("stopped reading at offset");
	// nil sends them to the standard logger.
	Logger *slog.Logger
	// Now is the clock that times records out; nil means time.Now (tests
	// set it).
	Now func() time.Time
	// ReadOnly opens an existing store without changing any of its files:
	// pebble replays its write-ahead log into memory (a torn tail is left
	// on disk, unread) and writes no manifest, log or options file; every
	// write returns engine.ErrReadOnly. A directory holding no store is
	// refused (*fsutil.NotClaimedError), and nothing is created.
	ReadOnly bool
}

func (o Options) withDefaults() Options {
	setting.Default(&o.Now, time.Now)
	setting.Default(&o.CacheSize, 64<<20)
	setting.Default(&o.MemTableSize, 64<<20)
	if o.BloomBitsPerKey >= 0 { // negative: no bloom filters
		setting.Default(&o.BloomBitsPerKey, 10)
	}
	return o
}

// Engine implements engine.Engine on one pebble database.
type Engine struct {
	db   *pebbledb.DB
	sync engine.SyncMode
	// now is the clock that decides whether a record's time to live has
	// passed.
	now func() time.Time
	// readOnly: opened with Options.ReadOnly.
	readOnly bool

	// life is held shared by every call and exclusively by Close, so Close
	// waits for calls in flight and pebble is never used after its Close.
	life   sync.RWMutex
	closed bool

	// writer serializes read-modify-writes: a writer holds it while it
	// reads current values, runs the UpdateFuncs and applies its batch to
	// the memtable, and releases it before waiting for the WAL fsync.
	writer sync.Mutex
	// unsynced counts batches applied to the memtable whose WAL fsync is
	// still awaited (durable writes under SyncAlways).
	unsynced atomic.Int64
	// lazyWrites counts the writes applied without an fsync (deferred, or
	// under SyncBlock); lazySynced is how many of them a finished WAL
	// fsync is known to cover. A fsync covers every write applied before
	// the write it syncs, so Checkpoint costs nothing when they are equal.
	lazyWrites, lazySynced atomic.Uint64
}

var _ engine.Engine = (*Engine)(nil)

// Open claims dir for this engine and opens (or creates) the store in
// dir/pebble; with Options.ReadOnly it opens the store dir holds and
// changes nothing. A directory claimed by another engine is refused before
// anything in it is read or written.
func Open(dir string, opts Options) (*Engine, error) {
	if err := fsutil.Claim(dir, Name, opts.ReadOnly); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	cache := pebbledb.NewCache(opts.CacheSize)
	defer cache.Unref() // pebble holds its own reference
	po := &pebbledb.Options{
		Cache:              cache,
		MemTableSize:       opts.MemTableSize,
		FormatMajorVersion: pebbledb.FormatNewest,
		ReadOnly:           opts.ReadOnly,
	}
	po.Levels = make([]pebbledb.LevelOptions, 7)
	for i := range po.Levels {
		if opts.BloomBitsPerKey > 0 {
			po.Levels[i].FilterPolicy = bloom.FilterPolicy(opts.BloomBitsPerKey)
		}
	}
	if opts.Logger != nil {
		po.Logger = logger{opts.Logger.With("engine", "pebble")}
	}
	db, err := pebbledb.Open(filepath.Join(dir, Subdir), po)
	if err != nil {
		return nil, fmt.Errorf("pebble: opening %s: %w", dir, err)
	}
	e := &Engine{db: db, sync: opts.Sync, now: opts.Now, readOnly: opts.ReadOnly}
	if err := e.checkVersion(); err != nil {
		db.Close()
		return nil, err
	}
	return e, nil
}

// checkVersion stamps a new store with the layout version and refuses a
// store written with another one. A store opened read-only is not
// stamped: one without a version was never written.
func (e *Engine) checkVersion() error {
	v, closer, err := e.db.Get([]byte{prefixVersion})
	if errors.Is(err, pebbledb.ErrNotFound) {
		if e.readOnly {
			return fmt.Errorf("pebble: the store holds no layout version: it was never written, and a read-only open does not start it")
		}
		return e.db.Set([]byte{prefixVersion}, []byte(layoutVersion), pebbledb.Sync)
	}
	if err != nil {
		return err
	}
	defer closer.Close()
	if string(v) != layoutVersion {
		return fmt.Errorf("pebble: store has layout version %q, this build reads %q", v, layoutVersion)
	}
	return nil
}

// Name implements engine.Engine.
func (e *Engine) Name() string { return Name }

// enter admits a call unless the engine is closed; leave ends it.
func (e *Engine) enter() error {
	e.life.RLock()
	if e.closed {
		e.life.RUnlock()
		return engine.ErrClosed
	}
	return nil
}

func (e *Engine) leave() { e.life.RUnlock() }

// enterWriting is enter for the calls that write, which an engine opened
// read-only refuses.
func (e *Engine) enterWriting() error {
	if e.readOnly {
		return engine.ErrReadOnly
	}
	return e.enter()
}

// durable reports whether a write made with ctx must be durable when it
// returns: under SyncAlways, unless ctx defers its sync.
func (e *Engine) durable(ctx context.Context) bool {
	return e.sync == engine.SyncAlways && !engine.SyncDeferred(ctx)
}

// allSynced reports whether every write that returned is durable.
func (e *Engine) allSynced() bool {
	return e.unsynced.Load() == 0 && e.lazySynced.Load() >= e.lazyWrites.Load()
}

// syncedThrough records that a WAL fsync covered the first n lazy writes.
func (e *Engine) syncedThrough(n uint64) {
	for {
		c := e.lazySynced.Load()
		if c >= n || e.lazySynced.CompareAndSwap(c, n) {
			return
		}
	}
}

// syncLog fsyncs the WAL, making every write applied before it durable.
func (e *Engine) syncLog() error {
	n := e.lazyWrites.Load()
	if err := e.db.LogData(nil, pebbledb.Sync); err != nil {
		return err
	}
	e.syncedThrough(n)
	return nil
}

// Close implements engine.Engine. It syncs the WAL first, so that under
// SyncBlock a clean shutdown loses nothing; read-only, it has nothing to
// sync.
func (e *Engine) Close() error {
	e.life.Lock()
	defer e.life.Unlock()
	if e.closed {
		return engine.ErrClosed
	}
	e.closed = true
	if e.readOnly {
		return e.db.Close()
	}
	return errors.Join(e.syncLog(), e.db.Close())
}

// Metrics returns pebble's metrics: DiskSpaceUsage() is the bytes on disk,
// Total().WriteAmp() the LSM's write amplification. Nil after Close.
func (e *Engine) Metrics() *pebbledb.Metrics {
	if e.enter() != nil {
		return nil
	}
	defer e.leave()
	return e.db.Metrics()
}

// logger adapts Options.Logger to pebble's Logger: pebble's messages are
// preformatted lines, so each becomes one record's message.
type logger struct{ l *slog.Logger }

func (l logger) Infof(format string, args ...any) { l.l.Info(fmt.Sprintf(format, args...)) }

// Fatalf reports and then exits through pebble's default logger: pebble
// calls it only when it cannot go on, and expects it not to return.
func (l logger) Fatalf(format string, args ...any) {
	l.l.Error(fmt.Sprintf(format, args...))
	pebbledb.DefaultLogger.Fatalf(format, args...)
}

// CopyTo implements engine.Copier with a pebble checkpoint: the database
// as of one sequence number (every batch whole or absent), its write-ahead
// log flushed first so that writes not yet synced are in it, written to
// dir/Subdir while the engine goes on serving. Unchanged table files are
// hard-linked when dir is on the same file system: pebble never writes a
// table file again once it is written.
func (e *Engine) CopyTo(_ context.Context, dir string) error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.leave()
	if err := fsutil.ClaimDir(dir, Name); err != nil {
		return err
	}
	if err := e.db.Checkpoint(filepath.Join(dir, Subdir), pebbledb.WithFlushedWAL()); err != nil {
		return fmt.Errorf("pebble: copying the store to %s: %w", dir, err)
	}
	return nil
}
