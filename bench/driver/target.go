// Package driver replays an operation stream against a target (a store
// over an engine, the block path over a store and the address index, or
// the map reference), timing every store call by class
// and checking that each call had the outcome the workload expects, so that
// a benchmark run is also a cross-engine correctness check.
package driver

import (
	"context"

	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo"
)

// Target is what the driver replays against: the store's public calls the
// benchmark times, reduced to the arguments the workload uses.
type Target interface {
	// Create stores tx: unmined when height is 0, else mined at height on
	// the longest chain.
	Create(ctx context.Context, tx *chain.Tx, height uint32) error
	// Spend spends tx's inputs (only those listed, when inputs is not
	// nil), all or nothing, judged at height (0: the store's next height).
	// errs[i] is the i-th spend's outcome.
	Spend(ctx context.Context, tx *chain.Tx, inputs []uint32, height uint32) (errs []error, err error)
	Connect(ctx context.Context, b *utxo.Block) error
	Disconnect(ctx context.Context, b *utxo.Block) error
	// Unspent reports, per outpoint, whether it is a stored unspent output.
	Unspent(ctx context.Context, ops []wire.OutPoint) ([]bool, error)
	// Summary is the final state: utxo.Summary's digest and counts.
	Summary(ctx context.Context) (utxo.Summary, error)
}
