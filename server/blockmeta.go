package server

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/utxo"
)

// dbBackend adapts *utxo.DB to Backend.
type dbBackend struct{ *utxo.DB }

// NewBackend serves db.
func NewBackend(db *utxo.DB) Backend { return dbBackend{db} }

// storedBlock mirrors the JSON the block processor writes under
// "block/<height>" in the engine's metadata.
//
// STOPGAP: utxo keeps this metadata unexported. Until it exports an
// accessor (requested: (*utxo.DB).BlockAt(ctx, height)), this file reads
// the engine metadata directly; it is the only place that knows the
// layout, and the e2e test fails loudly if the layout changes.
type storedBlock struct {
	Hash     chainhash.Hash `json:"hash"`
	PrevHash chainhash.Hash `json:"prevHash"`
	Txs      int            `json:"txs"`
}

// BlockAt implements Backend.
func (b dbBackend) BlockAt(ctx context.Context, height uint32) (BlockMeta, bool, error) {
	raw, err := b.Engine().GetMeta(ctx, fmt.Sprintf("block/%010d", height))
	if err != nil || raw == nil {
		return BlockMeta{}, false, err
	}
	var sb storedBlock
	if err := json.Unmarshal(raw, &sb); err != nil {
		return BlockMeta{}, false, fmt.Errorf("block metadata at height %d: %w", height, err)
	}
	return BlockMeta(sb), true, nil
}
