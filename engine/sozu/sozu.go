// Package sozu is utxostore's embedded engine: the Sozu table of Joannes
// Vermorel's paper ("The Sozu table, a blockchain-centric data structure
// for the UTXO dataset of Bitcoin", 2018,
// https://blog.vermorel.com/pdf/sozu-table-2018-08-16.pdf), a layered hash
// table whose buckets spill their oldest entries downward, adapted to
// 32-byte keys whose values are opaque bytes with engine.Terms.
//
// Layout. The hash (the key's first 8 bytes) picks a shard, then a bucket
// in every layer; layer i has B0·2^(k·i) buckets per shard. Layer 0 lives in
// memory; deeper layers live in the shard's page file on checksummed 4 KiB
// pages, allocated only when a parent first spills and only for buckets
// that hold something. Neighbouring buckets (spans of 64) are stored in
// runs: sparse ones share a page, a bucket that fills one gets its own
// (pagestore.go). Values larger than InlineMax live in the shard's value
// log; the bucket keeps a pointer. A page checkpoint compacts a value log
// whose garbage outweighs its live values (vlogcompact.go).
//
// Writes. Each shard has one goroutine, and a caller that finds its shard
// idle runs its request itself under the same lock; Update fans a batch
// out by shard and gathers the per-update results. A key is looked for behind a cuckoo
// filter (a "no" proves absence, so a create never descends); an update of
// an existing key lands where the key lives, so a key is always in exactly
// one bucket. A new key goes to layer 0. A bucket above its capacity first
// purges records whose delete-at-height has passed on the longest chain
// (the height given to SetHeight; Checkpoint's height does not purge, see
// SetHeight), then keeps ⌊α·capacity⌋
// bytes of its entries, letting the rest flow to its children in the
// paper's order: consumed first, oldest production height next, key last.
// What flows down, and any update or deletion of a deep entry, is first
// buffered in memory per bucket and applied to the bucket's pages once it
// is worth a page write (changes.go); reads look at the buffer first.
// Stored buckets of the layers of at most 2^17 buckets per shard have a
// summary in memory (their keys' fingerprints, children, height:
// summary.go), so a lookup of a key stored deeper reads none of their
// pages.
//
// Durability. Every mutation's outcome is logged (CRC32C per record) in the
// one log all shards share before it is acknowledged; under
// engine.SyncAlways one fsync covers every request the shards are applying
// at that moment (group commit), so a batch over all shards costs one
// fsync; a shard writes its oldest dirty buckets out while it waits for
// it (shard.write). A write whose context defers its sync
// (engine.DeferSync) is logged without one; the next durable write or
// Checkpoint covers it. Between syncs the log buffers its records in memory,
// in their global order, so a crash loses a tail, never a record in the
// middle. At a block boundary (Checkpoint) the log is fsynced: that is
// all a block needs, and it costs what the block wrote. Once the log outgrows
// Options.CheckpointLogBytes, Checkpoint also takes a page checkpoint: it
// writes the buckets (layer 0 and deep) changed since the last one to
// fresh pages (copy-on-write: pages the last checkpoint references are
// never overwritten), fsyncs pages and values, writes each shard's page
// directory and buffered changes to a new checkpoint file, then
// atomically switches the
// CHECKPOINT manifest to it and starts an empty log, in the previous log's
// file (wal_write.go: syncs then overwrite blocks the file has, and the file
// system's journal stays out of them). Open loads the
// checkpoint the manifest names and replays the log; a torn tail is
// truncated and reported (Stats.Recovery, Options.Logger), also one a power loss left
// with later blocks of an unsynced write on the disk (the marks around each
// write tell it apart, wal_tear.go). A torn write is dropped whole, so no
// shard's group of requests survives in part. Damage to records an fsync
// had made durable is refused as *engine.CorruptionError.
package sozu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/internal/fsutil"
)

// Name is the engine's registered name.
const Name = "sozu"

// Engine is a Sozu table over a data directory.
type Engine struct {
	dir    string
	opts   Options
	layout layout
	shards []*shard
	log    *writeAheadLog
	// barrier: every operation holds it shared; Checkpoint and Close hold
	// it exclusively, so a checkpoint sees every shard at rest.
	barrier  sync.RWMutex
	closed   bool
	failure  storeFailure // the first write failure of any shard (shard.fail)
	gen      uint64
	recovery RecoveryReport
	// logBytesBefore is what Stats.LogBytesWritten leaves out: the log
	// Open found, less the logs that page checkpoints retired since.
	logBytesBefore int64
	// overBudget is set once Checkpoint has reported the live heap past
	// the memory budget (warnIfOverBudget), so it says so once per open.
	overBudget bool
}

var _ engine.Engine = (*Engine)(nil)

// Open opens (or creates) the store in dir; with Options.ReadOnly it
// opens the store dir holds and changes none of its files.
func Open(dir string, opts Options) (*Engine, error) {
	if err := fsutil.Claim(dir, Name, opts.ReadOnly); err != nil {
		return nil, err
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	gen, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	e := &Engine{dir: dir, opts: o, layout: newLayout(o), gen: gen}
	for i := 0; i < o.Shards; i++ {
		s, err := openShard(dir, i, gen, o)
		if err != nil {
			e.closeFiles()
			return nil, err
		}
		s.failure = &e.failure
		e.shards = append(e.shards, s)
	}
	if err := e.recover(); err != nil {
		e.closeFiles()
		return nil, err
	}
	if !o.ReadOnly {
		e.removeStaleFiles()
	}
	for _, s := range e.shards {
		go s.loop()
	}
	return e, nil
}

// removeStaleFiles deletes checkpoints and logs of other generations and
// value logs the current checkpoint does not name: the leftovers of a
// crash in the middle of a checkpoint.
func (e *Engine) removeStaleFiles() {
	entries, _ := os.ReadDir(e.dir)
	for _, d := range entries {
		name := d.Name()
		if !isCheckpointFile(name) && !isLogFile(name) {
			continue
		}
		if !strings.HasSuffix(name, fmt.Sprintf(".%d", e.gen)) {
			os.Remove(filepath.Join(e.dir, name))
		}
	}
	for _, s := range e.shards {
		logs, _ := filepath.Glob(filepath.Join(e.dir, fmt.Sprintf("shard-%02d.vlog*", s.id)))
		for _, path := range logs {
			if path != s.table.values.path {
				os.Remove(path)
			}
		}
	}
}

// closeFiles releases every file the engine holds.
func (e *Engine) closeFiles() {
	for _, s := range e.shards {
		s.table.pages.close()
		s.table.values.close()
	}
	if e.log != nil {
		e.log.close()
	}
}

// Name implements engine.Engine.
func (e *Engine) Name() string { return Name }

// enter takes the shared barrier; the caller must call e.barrier.RUnlock.
func (e *Engine) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.barrier.RLock()
	if e.closed {
		e.barrier.RUnlock()
		return engine.ErrClosed
	}
	return nil
}

// enterWriting is enter for the calls that write, which an engine opened
// read-only refuses. A write that finds the log past its bound between
// block boundaries takes the page checkpoint first (see unboundedLog).
func (e *Engine) enterWriting(ctx context.Context) error {
	if e.opts.ReadOnly {
		return engine.ErrReadOnly
	}
	if err := e.enter(ctx); err != nil {
		return err
	}
	if e.log.written() < e.unboundedLog() {
		return nil
	}
	e.barrier.RUnlock()
	if err := e.Checkpoint(ctx, 0); err != nil {
		return err
	}
	return e.enter(ctx)
}

// unboundedLog is the log's length at which a write takes a page
// checkpoint itself: twice CheckpointLogBytes, and at least 64 MiB, as a
// page checkpoint costs a pass over the changed buckets. Only a block
// boundary (Checkpoint) takes one otherwise, and a store written for long
// with no block (a daemon taking unmined transactions) would grow a log
// that its reopen replays in full.
func (e *Engine) unboundedLog() int64 {
	return max(2*int64(e.opts.CheckpointLogBytes), 64<<20)
}

// byShard groups positions 0..n-1 by the shard of key(i), keeping order.
func (e *Engine) byShard(n int, key func(i int) *engine.Key) map[int][]int {
	groups := make(map[int][]int)
	for i := 0; i < n; i++ {
		s := e.layout.shard(keyHash(key(i)))
		groups[s] = append(groups[s], i)
	}
	return groups
}

// fanOut runs fn on every shard named in groups as reading or writing
// requests, and joins the engine errors. The caller runs one group itself
// if its shard is idle (shard.call) while the shards' goroutines run the
// others, concurrently; it also runs every group smaller than handOffMin
// itself: handing a few keys to a goroutine and back costs two thread
// wake-ups, more than the work.
//
// A durable write under SyncAlways is made durable here, by one fsync
// once every shard has appended its records (request.callerSyncs): left
// to the shards, each would sync as it finished, and shards that finish
// apart would pay an fsync each for one batch.
func (e *Engine) fanOut(reads, lazy bool, groups map[int][]int, fn func(s *shard, positions []int) error) error {
	callerSyncs := !reads && !lazy && e.opts.Sync == engine.SyncAlways
	reqs := make(map[int]*request, len(groups))
	var mine, sent []int
	for id, positions := range groups {
		reqs[id] = &request{run: func(s *shard) error { return fn(s, positions) }, reads: reads, lazy: lazy, callerSyncs: callerSyncs}
		if len(mine) == 0 || len(positions) < handOffMin {
			mine = append(mine, id)
			continue
		}
		sent = append(sent, id)
		e.shards[id].sendRequest(reqs[id])
	}
	var errs []error
	for _, id := range mine {
		if err := e.shards[id].callRequest(reqs[id]); err != nil {
			errs = append(errs, err)
		}
	}
	for _, id := range sent {
		if err := reqs[id].wait(); err != nil {
			errs = append(errs, err)
		}
	}
	if callerSyncs {
		var end int64
		for _, r := range reqs {
			end = max(end, r.end)
		}
		if err := e.log.syncTo(end); err != nil {
			errs = append(errs, e.fail(err))
		}
	}
	return joinShardErrors(errs)
}

// handOffMin is the smallest group of keys fanOut hands to a shard's
// goroutine when it need not: below it, running the group in the caller
// costs less than the hand-off.
const handOffMin = 64

// Get implements engine.Engine.
func (e *Engine) Get(ctx context.Context, keys []engine.Key) ([][]byte, error) {
	return e.GetAtHeight(ctx, keys, 0)
}

// GetAtHeight is Get with the paper's height filter: a key produced below
// minHeight may be reported missing when it lives in a bucket whose
// ancestors saw nothing produced at or above minHeight, because the
// descent stops there. Keys found before the descent stops are returned
// whatever their height. 0 disables the filter.
func (e *Engine) GetAtHeight(ctx context.Context, keys []engine.Key, minHeight uint32) ([][]byte, error) {
	if err := e.enter(ctx); err != nil {
		return nil, err
	}
	defer e.barrier.RUnlock()
	out := make([][]byte, len(keys))
	err := e.fanOut(true, false, e.byShard(len(keys), func(i int) *engine.Key { return &keys[i] }), func(s *shard, positions []int) error {
		sub := make([]engine.Key, len(positions))
		for j, i := range positions {
			sub[j] = keys[i]
		}
		values, err := s.table.get(sub, minHeight)
		if err != nil {
			return err
		}
		for j, i := range positions {
			out[i] = values[j]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Update implements engine.Engine. The UpdateFuncs run on the shard
// goroutines; updates of one key apply in batch order.
func (e *Engine) Update(ctx context.Context, updates []engine.Update) ([]error, error) {
	if err := e.enterWriting(ctx); err != nil {
		return nil, err
	}
	defer e.barrier.RUnlock()
	errs := make([]error, len(updates))
	err := e.fanOut(false, engine.SyncDeferred(ctx), e.byShard(len(updates), func(i int) *engine.Key { return &updates[i].Key }), func(s *shard, positions []int) error {
		return s.update(updates, positions, errs)
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// CreateOnly implements engine.Engine.
func (e *Engine) CreateOnly(ctx context.Context, key engine.Key, value []byte, ttl time.Duration) error {
	if err := e.enterWriting(ctx); err != nil {
		return err
	}
	defer e.barrier.RUnlock()
	return e.shards[e.layout.shard(keyHash(&key))].call(func(s *shard) error { return s.createOnly(key, value, ttl) }, false, engine.SyncDeferred(ctx))
}

// Delete implements engine.Engine.
func (e *Engine) Delete(ctx context.Context, keys []engine.Key) error {
	if err := e.enterWriting(ctx); err != nil {
		return err
	}
	defer e.barrier.RUnlock()
	return e.fanOut(false, engine.SyncDeferred(ctx), e.byShard(len(keys), func(i int) *engine.Key { return &keys[i] }), func(s *shard, positions []int) error {
		return s.delete(keys, positions)
	})
}

// Scan implements engine.Engine.
func (e *Engine) Scan(ctx context.Context, idx engine.Index, lo, hi uint32, fn func(engine.Key, uint32) error) error {
	if err := e.enter(ctx); err != nil {
		return err
	}
	type hit struct {
		key  engine.Key
		term uint32
	}
	var hits []hit
	for _, s := range e.shards {
		err := s.read(func(s *shard) error {
			for k, term := range s.table.indexes.Of(idx) {
				if term >= lo && term <= hi {
					hits = append(hits, hit{k, term})
				}
			}
			return nil
		})
		if err != nil {
			e.barrier.RUnlock()
			return err
		}
	}
	e.barrier.RUnlock()
	for _, h := range hits {
		if err := fn(h.key, h.term); err != nil {
			return err
		}
	}
	return nil
}

// ForEach implements engine.Engine. fn runs on each shard's goroutine in
// turn, so it must not call back into the engine (the contract says so).
func (e *Engine) ForEach(ctx context.Context, fn func(engine.Key, []byte) error) error {
	if err := e.enter(ctx); err != nil {
		return err
	}
	defer e.barrier.RUnlock()
	for _, s := range e.shards {
		var fnErr error
		err := s.read(func(s *shard) error {
			now := s.table.now()
			return s.table.walk(func(_ int, b *bucket, _ bool) error {
				for i := range b.entries {
					en := &b.entries[i]
					if !en.live(now) {
						continue
					}
					v, err := s.table.valueOf(en)
					if err != nil {
						return err
					}
					if err := fn(en.key, v); err != nil {
						fnErr = err
						return err
					}
				}
				return nil
			})
		})
		if fnErr != nil {
			return fnErr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// GetMeta implements engine.Engine. Metadata lives in shard 0: its log and
// checkpoint carry it.
func (e *Engine) GetMeta(ctx context.Context, name string) ([]byte, error) {
	if err := e.enter(ctx); err != nil {
		return nil, err
	}
	defer e.barrier.RUnlock()
	var v []byte
	err := e.shards[0].read(func(s *shard) error {
		if m, ok := s.table.meta[name]; ok {
			v = append([]byte{}, m...)
		}
		return nil
	})
	return v, err
}

// PutMeta implements engine.Engine.
func (e *Engine) PutMeta(ctx context.Context, name string, value []byte) error {
	if err := e.enterWriting(ctx); err != nil {
		return err
	}
	defer e.barrier.RUnlock()
	return e.shards[0].call(func(s *shard) error {
		s.records.logMeta(name, value)
		s.table.meta[name] = append([]byte{}, value...)
		return nil
	}, false, engine.SyncDeferred(ctx))
}

// SetHeight tells the engine the longest chain's height: from now on the
// purge loop may hard-delete records whose delete-at-height is at or below
// it (and that nothing preserves beyond it). It is logged like a write and
// kept in checkpoints. Checkpoint's height deliberately does not set it:
// the engine contract gives Checkpoint no deleting power, and callers that
// pass an unrelated number there (tests, bulk import) must not lose
// records; the store calls SetHeight when it knows the longest chain. 0
// (the default) turns the purge off. It is not fsynced on its own (a lost
// height only delays the purge); the next durable write or Checkpoint
// makes it durable, in log order.
func (e *Engine) SetHeight(ctx context.Context, height uint32) error {
	if err := e.enterWriting(ctx); err != nil {
		return err
	}
	defer e.barrier.RUnlock()
	reqs := make([]*request, len(e.shards))
	for i, s := range e.shards {
		reqs[i] = &request{done: make(chan struct{}), lazy: true, run: func(s *shard) error {
			s.records.logHeight(height)
			s.table.height = height
			return nil
		}}
		s.inbox <- reqs[i]
	}
	var errs []error
	for _, r := range reqs {
		errs = append(errs, r.wait())
	}
	return joinShardErrors(errs)
}

// checkpoint is the page checkpoint: every shard writes its changed buckets
// to fresh pages and a new checkpoint file, then the manifest switches
// generation and the log starts empty.
func (e *Engine) checkpoint() error {
	next := e.gen + 1
	if err := e.eachShard(func(s *shard) error { return s.prepareCheckpoint(next) }); err != nil {
		for _, s := range e.shards {
			os.Remove(checkpointPath(e.dir, s.id, next))
		}
		return fmt.Errorf("sozu: checkpoint %d: %w", next, err)
	}
	// A manifest that failed may still name next (renamed, its directory
	// not synced), so a reopen may find either generation: both must stay
	// whole, and neither can be written on. Stop the store, keeping next's
	// checkpoints; Open removes the generation the manifest does not name.
	if err := writeManifest(e.dir, next); err != nil {
		return e.fail(fmt.Errorf("sozu: checkpoint %d: writing the manifest: %w", next, err))
	}
	prev, old := e.gen, e.log
	log, err := e.nextLog(old, next)
	// The fsync counters run on from log to log (Stats.LogSyncs).
	log.syncs, log.syncTime = old.syncCount()
	e.gen, e.log = next, log
	for _, s := range e.shards {
		s.do(func(s *shard) error { s.finishCheckpoint(prev, log); return nil })
	}
	e.logBytesBefore -= old.written()
	if err != nil {
		return e.fail(fmt.Errorf("sozu: checkpoint %d: %w", next, err))
	}
	return nil
}

// fail records a failure of the log, which every shard shares: like a
// shard's failed write (shard.fail), it stops the store until reopened.
func (e *Engine) fail(err error) error {
	e.failure.record(err)
	return err
}

// nextLog starts the log of generation gen, which the manifest names
// already; until the log exists, Open reads it as empty, and it is: no
// write runs during a page checkpoint. It writes the new log over old's
// file (recycle). Failing that, it
// starts the log in a new file; failing that too, it returns a log that
// refuses every write with the error, as the log does after a failed
// fsync.
func (e *Engine) nextLog(old *writeAheadLog, gen uint64) (*writeAheadLog, error) {
	path := logPath(e.dir, gen)
	log, err := old.recycle(path, gen, int64(e.opts.CheckpointLogBytes))
	if err == nil {
		return log, nil
	}
	old.close()
	os.Remove(old.path)
	if log, err = createLog(path, gen); err == nil {
		log.grow = old.grow
		return log, nil
	}
	log = newLog(nil, path, gen, 0)
	log.failed = fmt.Errorf("sozu: starting log %s: %w", path, err)
	return log, log.failed
}

// joinShardErrors joins the shards' errors, each message once: a failed
// log fails every shard with the same error, which one line says.
func joinShardErrors(errs []error) error {
	var distinct []error
	for _, err := range errs {
		if err != nil && !slices.ContainsFunc(distinct, func(d error) bool { return d.Error() == err.Error() }) {
			distinct = append(distinct, err)
		}
	}
	return errors.Join(distinct...)
}

// eachShard runs fn on every shard's goroutine, concurrently, as writing
// requests, and joins their errors.
func (e *Engine) eachShard(fn func(s *shard) error) error {
	reqs := make([]*request, len(e.shards))
	for i, s := range e.shards {
		reqs[i] = s.start(fn)
	}
	var errs []error
	for _, r := range reqs {
		errs = append(errs, r.wait())
	}
	return joinShardErrors(errs)
}

// Close implements engine.Engine: it checkpoints, so the next Open replays
// nothing, and releases the files. Read-only, it only releases them.
func (e *Engine) Close() error {
	e.barrier.Lock()
	defer e.barrier.Unlock()
	if e.closed {
		return engine.ErrClosed
	}
	e.closed = true
	var err error
	if !e.opts.ReadOnly {
		err = e.checkpoint()
	}
	e.stop()
	return err
}

// stop ends the shards' goroutines and releases the files.
func (e *Engine) stop() {
	for _, s := range e.shards {
		close(s.inbox)
	}
	e.closeFiles()
}
