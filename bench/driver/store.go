package driver

import (
	"context"
	"fmt"

	"github.com/utxostore/utxostore/coinstats"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// Store drives a utxo.DB through its public API only.
type Store struct{ DB *utxo.DB }

// Create implements Target.
func (s Store) Create(ctx context.Context, tx *chain.Tx, height uint32) error {
	if height == 0 {
		_, err := s.DB.Create(ctx, tx, s.DB.GetBlockHeight())
		return err
	}
	// The block id only has to be non-zero and stable; the height is.
	info := model.MinedBlockInfo{BlockID: height, BlockHeight: height, OnLongestChain: true}
	_, err := s.DB.Create(ctx, tx, height, utxo.WithMinedBlockInfo(info))
	return err
}

// Spend implements Target. A subset of inputs is spent through a view of
// the transaction holding only those inputs: the spending data then numbers
// them within the view (vin), which nothing in the benchmark reads.
func (s Store) Spend(ctx context.Context, tx *chain.Tx, inputs []uint32, height uint32) ([]error, error) {
	if inputs != nil {
		msg := &wire.MsgTx{Version: tx.Msg.Version, TxOut: tx.Msg.TxOut, LockTime: tx.Msg.LockTime}
		for _, vin := range inputs {
			msg.TxIn = append(msg.TxIn, tx.Msg.TxIn[vin])
		}
		tx = &chain.Tx{Msg: msg, Raw: tx.Raw, ID: tx.ID}
	}
	var opts []utxo.SpendOption
	if height != 0 {
		opts = append(opts, utxo.WithBlockHeight(height))
	}
	spends, err := s.DB.Spend(ctx, tx, opts...)
	errs := make([]error, len(spends))
	for i, sp := range spends {
		errs[i] = sp.Err
	}
	return errs, err
}

// Connect implements Target.
func (s Store) Connect(ctx context.Context, b *utxo.Block) error { return s.DB.ConnectBlock(ctx, *b) }

// Disconnect implements Target.
func (s Store) Disconnect(ctx context.Context, b *utxo.Block) error {
	return s.DB.DisconnectBlock(ctx, *b)
}

// Unspent implements Target with one BatchDecorate of the distinct txids.
func (s Store) Unspent(ctx context.Context, ops []wire.OutPoint) ([]bool, error) {
	index := map[chainhash.Hash]int{}
	var items []*utxo.UnresolvedMetaData
	for _, op := range ops {
		if _, ok := index[op.Hash]; !ok {
			index[op.Hash] = len(items)
			items = append(items, &utxo.UnresolvedMetaData{TxID: op.Hash, Idx: len(items)})
		}
	}
	if err := s.DB.BatchDecorate(ctx, items, utxo.FieldOutputs); err != nil {
		return nil, err
	}
	out := make([]bool, len(ops))
	for i, op := range ops {
		it := items[index[op.Hash]]
		if it.Err != nil {
			return nil, fmt.Errorf("reading %s: %w", op.Hash, it.Err)
		}
		if int(op.Index) < len(it.Meta.Outputs) {
			o := it.Meta.Outputs[op.Index]
			out[i] = o.Stored && o.SpendingData == nil
		}
	}
	return out, nil
}

// SetStats returns the set's statistics at the tip.
func (s Store) SetStats(ctx context.Context) (coinstats.Summary, error) { return s.DB.SetStats(ctx) }

// Summary implements Target.
func (s Store) Summary(ctx context.Context) (utxo.Summary, error) { return s.DB.Summary(ctx) }
