package index

import (
	"encoding/hex"
	"errors"
	"fmt"
)

// Sentinel errors; the typed errors below wrap them so errors.Is works.
var (
	// ErrCoinMismatch: the index was built for another coin.
	ErrCoinMismatch = errors.New("index: coin mismatch")
	// ErrVersionMismatch: the index has another data format version.
	ErrVersionMismatch = errors.New("index: data format version mismatch")
	// ErrInconsistent: the index was marked inconsistent.
	ErrInconsistent = errors.New("index: database is in inconsistent state")
	// ErrUncleanShutdown: the index was not closed (only with Options.RefuseUnclean).
	ErrUncleanShutdown = errors.New("index: database was left open (unclean shutdown)")
	// ErrCorrupt: a stored key or value does not decode; see *CorruptError.
	ErrCorrupt = errors.New("index: malformed data")
	// ErrNotNext: ConnectBlock got a block that is not tip+1.
	ErrNotNext = errors.New("index: block does not extend the tip")
	// ErrNotTip: DisconnectBlock got a block that is not the tip.
	ErrNotTip = errors.New("index: block is not the tip")
	// ErrRollbackTooDeep: blockTxs no longer holds the block.
	ErrRollbackTooDeep = errors.New("index: block is older than the rollback window; rebuild the index")
	// ErrBulkActive: a bulk import owns the index.
	ErrBulkActive = errors.New("index: a bulk import is in progress")
	// ErrClosed: the index or bulk import was closed.
	ErrClosed = errors.New("index: closed")
)

// StateError is returned by Open when the stored internalState forbids
// using the directory. The remedy is always the same as Blockbook's: the
// index must be recreated.
type StateError struct {
	Dir    string
	Err    error // one of the sentinels above
	Detail string
}

func (e *StateError) Error() string {
	if errors.Is(e.Err, ErrUncleanShutdown) {
		// Every write is one atomic batch, so the data is at a block
		// boundary; only the operator's policy refused it.
		return fmt.Sprintf("%v: %s; the index in %s is at a block boundary: open it without RefuseUnclean to continue, or delete the directory and rebuild the index", e.Err, e.Detail, e.Dir)
	}
	return fmt.Sprintf("%v: %s; the index in %s cannot be used: delete the directory and rebuild the index", e.Err, e.Detail, e.Dir)
}

func (e *StateError) Unwrap() error { return e.Err }

// CorruptError names the column family and key whose value is malformed.
type CorruptError struct {
	Column string
	Key    []byte // without the column prefix
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("index: column %s: key %s: malformed value: %s", e.Column, hex.EncodeToString(e.Key), e.Reason)
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

func corrupt(c column, key []byte, format string, args ...any) error {
	return &CorruptError{Column: c.String(), Key: key, Reason: fmt.Sprintf(format, args...)}
}
