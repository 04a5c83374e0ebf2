// Package blob stores transactions outside the record engine: those larger
// than a record should carry, those with more outputs than one record holds,
// or all of them when the store is configured so. The filesystem store is the
// default; any other backend implements Store.
package blob

import (
	"context"
	"errors"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// FileType distinguishes the two kinds of external file.
type FileType string

const (
	// FileTypeTx holds the complete serialized transaction.
	FileTypeTx FileType = "tx"
	// FileTypeOutputs holds a UTXOWrapper: only the outputs.
	FileTypeOutputs FileType = "outputs"
)

// Errors of every Store.
var (
	ErrNotFound = errors.New("blob: not found")
	ErrExists   = errors.New("blob: already exists")
)

// Store is an external transaction store.
type Store interface {
	// Put writes data if no blob of that name exists yet (ErrExists
	// otherwise); the write is atomic: readers see all of it or nothing.
	Put(ctx context.Context, txid chainhash.Hash, ft FileType, data []byte) error
	// Get returns the blob or ErrNotFound.
	Get(ctx context.Context, txid chainhash.Hash, ft FileType) ([]byte, error)
	// SetDAH schedules the blob for deletion at height; 0 cancels it.
	SetDAH(ctx context.Context, txid chainhash.Hash, ft FileType, height uint32) error
	// Delete removes the blob; a missing blob is not an error.
	Delete(ctx context.Context, txid chainhash.Hash, ft FileType) error
	// Prune deletes every blob whose delete-at-height is at or below
	// height and returns how many it deleted.
	Prune(ctx context.Context, height uint32) (int, error)
}
