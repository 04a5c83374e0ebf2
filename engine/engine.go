// Package engine defines the small key/value contract that every storage
// engine of utxostore meets.
//
// Engines never interpret a record. They store opaque bytes under a 32-byte
// key together with a few index terms that the record layer computes, and
// they make a read-modify-write of one key atomic. Every rule of the UTXO
// state machine lives once, in package utxo/record, and runs inside the
// UpdateFunc an engine is handed; an embedded engine runs it under the
// owning shard's single writer, a distributed engine runs it as an
// optimistic check-and-set and retries on conflict.
package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// KeySize is the size of every record key.
const KeySize = 32

// Key names one record. Master records use the transaction id itself;
// child and lock records use a hash of the transaction id and the record
// index, so every key is uniformly distributed and an engine may use its
// leading bytes as a hash.
type Key [KeySize]byte

// Terms are the index terms of a record. The record layer returns them with
// every write so that engines can answer the index scans without decoding
// values. Zero means "not set" for every height.
type Terms struct {
	// UnminedSince is the height since which the transaction is unmined on
	// the longest chain.
	UnminedSince uint32
	// DeleteAtHeight is the height at which the record may be deleted.
	DeleteAtHeight uint32
	// PreserveUntil is the height until which the record must be kept.
	PreserveUntil uint32
	// ProducedAt is the highest height of a block that mined the record's
	// transaction. Engines that keep data by age (Sozu) use it.
	ProducedAt uint32
	// Consumed reports that every output held by the record is spent; such
	// records are the first to sink in Sozu's spill order.
	Consumed bool
}

// Index names one of the secondary indexes every engine keeps.
type Index uint8

// The secondary indexes. Each holds the keys whose corresponding term is
// non-zero.
const (
	ByUnminedSince Index = iota + 1
	ByDeleteAtHeight
	ByPreserveUntil
)

func (i Index) String() string {
	switch i {
	case ByUnminedSince:
		return "unminedSince"
	case ByDeleteAtHeight:
		return "deleteAtHeight"
	case ByPreserveUntil:
		return "preserveUntil"
	}
	return "unknown index"
}

// Term returns the term of t that index i is keyed by.
func (i Index) Term(t Terms) uint32 {
	switch i {
	case ByUnminedSince:
		return t.UnminedSince
	case ByDeleteAtHeight:
		return t.DeleteAtHeight
	case ByPreserveUntil:
		return t.PreserveUntil
	}
	return 0
}

// Indexes lists every secondary index.
var Indexes = []Index{ByUnminedSince, ByDeleteAtHeight, ByPreserveUntil}

// Action says what an update does to its record.
type Action uint8

const (
	// Keep leaves the record exactly as it is.
	Keep Action = iota
	// Put stores Mutation.Value with Mutation.Terms.
	Put
	// Remove deletes the record.
	Remove
)

// Mutation is the outcome of an UpdateFunc.
type Mutation struct {
	Action Action
	Value  []byte
	Terms  Terms
}

// UpdateFunc computes the next state of one record from its current bytes
// (nil when the record does not exist). It may be called more than once for
// the same key, because optimistic engines retry on conflict, so it must be a
// pure function of current; only the last call's result is applied. When it
// returns an error the record is left unchanged and the error is reported for
// that update. current is lent for the call: the function neither changes
// it nor keeps it (nor anything sharing its memory) once it returns, so an
// engine may hand over its own bytes without a copy. The Mutation's Value
// may be part of current, which the engine stores as it was lent. The
// functions of one batch's different keys may run concurrently (Sozu runs
// each shard's part of a batch on its own goroutine, the memory engine
// splits a large batch of distinct keys among the processors).
type UpdateFunc func(current []byte) (Mutation, error)

// Update is one read-modify-write of a batch.
type Update struct {
	Key Key
	Fn  UpdateFunc
}

// Engine is the contract. All methods are safe for concurrent use.
//
// Durability: when Update, CreateOnly, Delete or PutMeta return nil, their
// effect survives a crash of the process or of the machine if the engine was
// opened with SyncAlways and the call's context does not defer its sync
// (DeferSync); otherwise it survives once the next Checkpoint returns.
// Durability keeps the order of the writes: when a durable write returns,
// every write that returned before it is durable too, deferred or not. So a
// unit of writes made with DeferSync (a block) costs one sync, paid by the
// durable write that ends it, and a crash before that write returns may keep
// any part of the unit but nothing after it.
type Engine interface {
	// Name is the engine's registered name ("memory", "pebble", ...).
	Name() string

	// Get returns the value of each key, nil where the record does not
	// exist (or its time to live has passed). A record stored with an empty
	// value is returned as a non-nil empty slice. The values are the
	// caller's: no later call changes their bytes, an Update of the same
	// key included.
	Get(ctx context.Context, keys []Key) ([][]byte, error)

	// Update applies every update of the batch, each atomically for its
	// key. Updates of the same key within one batch apply in batch order,
	// each seeing the result of the one before. errs has one entry per
	// update: the error its UpdateFunc returned, or nil. err is non-nil
	// only when the engine itself failed (I/O, lost connection); then the
	// caller must assume any subset of the batch may have been applied.
	Update(ctx context.Context, updates []Update) (errs []error, err error)

	// CreateOnly stores value under key only if no live record exists
	// there, and returns ErrExists otherwise. A positive ttl makes the
	// record disappear after that long; it is meant for lock records.
	CreateOnly(ctx context.Context, key Key, value []byte, ttl time.Duration) error

	// Delete removes the records; missing keys are not an error.
	Delete(ctx context.Context, keys []Key) error

	// Scan calls fn for every record whose term for index idx lies in
	// [lo, hi] (zero terms are never indexed), in no particular order, one
	// call at a time. fn must not call back into the engine; collect and
	// act afterwards.
	Scan(ctx context.Context, idx Index, lo, hi uint32, fn func(key Key, term uint32) error) error

	// ForEach calls fn for every live record, in no particular order, one
	// call at a time. The value is only valid during the call. fn must not
	// call back into the engine.
	ForEach(ctx context.Context, fn func(key Key, value []byte) error) error

	// GetMeta returns the named store-wide value (nil when unset);
	// PutMeta sets it. Metadata lives beside the records: the store's
	// internal state, block height and median time.
	GetMeta(ctx context.Context, name string) ([]byte, error)
	PutMeta(ctx context.Context, name string, value []byte) error

	// Checkpoint marks a block boundary: every write before it is durable
	// when it returns, whatever the sync mode.
	Checkpoint(ctx context.Context, height uint32) error

	// Close flushes and releases the engine. Using it afterwards returns
	// ErrClosed.
	Close() error
}

// HeightAware is implemented by engines that clean up by themselves (Sozu's
// purge of records whose delete-at-height has passed). The store tells them
// the longest chain's height whenever it changes, after a block only once
// its own prune has removed what is due at that height: the prune records
// each removed transaction among its parents' deleted children, which an
// engine's purge cannot. Checkpoint never deletes.
type HeightAware interface {
	SetHeight(ctx context.Context, height uint32) error
}

// deferSyncKey is the context key of DeferSync.
type deferSyncKey struct{}

// DeferSync returns a context whose writes need not be durable when they
// return, even under SyncAlways: they become durable with the next durable
// write or Checkpoint (see Engine). It is for the writes of a unit whose
// last write, made without it, is the one a caller is told about. An engine
// may still make a deferred write durable at once.
func DeferSync(ctx context.Context) context.Context {
	return context.WithValue(ctx, deferSyncKey{}, true)
}

// SyncDeferred reports whether writes made with ctx defer their sync
// (DeferSync).
func SyncDeferred(ctx context.Context) bool {
	deferred, _ := ctx.Value(deferSyncKey{}).(bool)
	return deferred
}

// SyncMode chooses when writes become durable.
type SyncMode uint8

const (
	// SyncAlways makes every acknowledged write durable before it returns
	// (a synced write-ahead log with group commit). The default.
	SyncAlways SyncMode = iota
	// SyncBlock makes writes durable only at Checkpoint, the Sozu paper's
	// block-boundary durability. A crash loses every write since the last
	// checkpoint; it is meant for bulk import, which resumes from the last
	// checkpointed block.
	SyncBlock
)

func (m SyncMode) String() string {
	if m == SyncBlock {
		return "block"
	}
	return "always"
}

// ParseSyncMode parses a sync mode by the name String gives it; "" is
// SyncAlways.
func ParseSyncMode(s string) (SyncMode, error) {
	switch s {
	case "", "always":
		return SyncAlways, nil
	case "block":
		return SyncBlock, nil
	}
	return 0, fmt.Errorf("engine: unknown sync mode %q (known: always, block)", s)
}

// Errors every engine returns.
var (
	// ErrExists is returned by CreateOnly when the key holds a live record.
	ErrExists = errors.New("engine: record already exists")
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("engine: closed")
	// ErrReadOnly is returned by every method that would write (Update,
	// CreateOnly, Delete, PutMeta, Checkpoint, SetHeight) of an engine
	// opened read-only.
	ErrReadOnly = errors.New("engine: opened read-only")
)

// CorruptionError reports data that failed its checksum or could not be
// decoded. Engines return it instead of the corrupt bytes.
type CorruptionError struct {
	Engine string
	Where  string // file, page or log offset
	Detail string
}

func (e *CorruptionError) Error() string {
	return e.Engine + ": corrupt data at " + e.Where + ": " + e.Detail
}

// Copier is an engine that copies its store, as it stands at one moment,
// into a new directory while it serves: a backup. The copy is a store the
// engine opens, holding every write that returned before CopyTo began and
// none that began after it returned. Engines that keep their data in a
// directory implement it; the others (memory, redis) do not, and
// CopyStore refuses them.
type Copier interface {
	// CopyTo copies the store into dir, which must not exist.
	CopyTo(ctx context.Context, dir string) error
}

// CopyStore copies e's store into dir (Copier), or refuses an engine that
// cannot with a *CannotCopyError.
func CopyStore(ctx context.Context, e Engine, dir string) error {
	c, ok := e.(Copier)
	if !ok {
		return &CannotCopyError{Engine: e.Name()}
	}
	return c.CopyTo(ctx, dir)
}

// CannotCopyError refuses a copy of a store whose engine keeps no files
// to copy (memory) or keeps them elsewhere (redis).
type CannotCopyError struct {
	Engine string
}

func (e *CannotCopyError) Error() string {
	return fmt.Sprintf("engine %s cannot copy its store: only the engines that keep their files in the data directory (sozu, pebble) can; back up a %s store with its own tools", e.Engine, e.Engine)
}
