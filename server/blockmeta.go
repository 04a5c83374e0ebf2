package server

import (
	"context"

	"github.com/utxostore/utxostore/utxo"
)

// dbBackend adapts *utxo.DB to Backend.
type dbBackend struct{ *utxo.DB }

// NewBackend serves db.
func NewBackend(db *utxo.DB) Backend { return dbBackend{db} }

// BlockAt implements Backend.
func (b dbBackend) BlockAt(ctx context.Context, height uint32) (BlockMeta, bool, error) {
	return b.DB.BlockAt(ctx, height)
}
