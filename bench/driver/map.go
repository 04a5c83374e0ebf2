package driver

import (
	"context"

	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/bench/mapref"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo"
)

// Map drives the map reference.
type Map struct {
	Set  *mapref.Set
	last *mapref.Summary // the latest Summary's
}

// NewMap returns a target over an empty map.
func NewMap() Map { return Map{Set: mapref.New(), last: &mapref.Summary{}} }

// MinimalBytes is the minimal serialised size of the set at the latest
// Summary (mapref.Summary), which a run calls once at its end.
func (m Map) MinimalBytes() uint64 { return m.last.MinimalBytes }

// Create implements Target.
func (m Map) Create(_ context.Context, tx *chain.Tx, height uint32) error {
	return m.Set.Create(tx, height != 0)
}

// Spend implements Target; the map has no heights, so no maturity check.
func (m Map) Spend(_ context.Context, tx *chain.Tx, inputs []uint32, _ uint32) ([]error, error) {
	return m.Set.Spend(tx, inputs)
}

// Connect implements Target.
func (m Map) Connect(_ context.Context, b *utxo.Block) error { return m.Set.Connect(b) }

// Disconnect implements Target.
func (m Map) Disconnect(_ context.Context, b *utxo.Block) error {
	m.Set.Disconnect(b)
	return nil
}

// Unspent implements Target.
func (m Map) Unspent(_ context.Context, ops []wire.OutPoint) ([]bool, error) {
	out := make([]bool, len(ops))
	for i, op := range ops {
		out[i] = m.Set.Unspent(op)
	}
	return out, nil
}

// Summary implements Target.
func (m Map) Summary(context.Context) (utxo.Summary, error) {
	s := m.Set.Summary()
	*m.last = s
	return utxo.Summary{Utxos: s.Utxos, Satoshis: s.Satoshis, Digest: s.Digest}, nil
}
