package utxo

import (
	"context"
	"errors"
	"sort"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/model"
)

// UnminedLister lists the unmined transactions (Store does).
type UnminedLister interface {
	GetUnminedTxIterator(ctx context.Context) (UnminedTxIterator, error)
}

// Mempool lists the unmined transactions of l's iterator, in its order,
// leaving out those still being created (Creating): a wallet, an explorer
// or a fee estimate shows a transaction once all its records are written.
func Mempool(ctx context.Context, l UnminedLister) ([]*UnminedTransaction, error) {
	it, err := l.GetUnminedTxIterator(ctx)
	if err != nil {
		return nil, err
	}
	var list []*UnminedTransaction
	for {
		u, err := it.Next(ctx)
		if err != nil || u == nil {
			return list, err
		}
		if !u.Creating {
			list = append(list, u)
		}
	}
}

// GetUnminedTxIterator implements Store. It lists the unmined transactions
// once, in createdAt order (then txid, so the order is total), leaving out
// conflicting ones as both reference stores do.
func (db *DB) GetUnminedTxIterator(ctx context.Context) (UnminedTxIterator, error) {
	txids, err := db.scanUnmined(ctx, 1, ^uint32(0))
	if err != nil {
		return nil, err
	}
	items := make([]*UnresolvedMetaData, len(txids))
	for i, txid := range txids {
		items[i] = &UnresolvedMetaData{TxID: txid}
	}
	if err := db.BatchDecorate(ctx, items, FieldOutputs); err != nil {
		return nil, err
	}
	list := make([]*UnminedTransaction, 0, len(items))
	for _, it := range items {
		if errors.Is(it.Err, model.ErrTxNotFound) {
			continue // deleted since the scan
		}
		if it.Err != nil {
			return nil, it.Err
		}
		m := it.Meta
		if m.Conflicting {
			continue // a double spend is not to be recovered
		}
		list = append(list, &UnminedTransaction{
			TxID: m.TxID, CreatedAt: m.CreatedAt, UnminedSince: m.UnminedSince,
			Fee: m.Fee, SizeInBytes: m.SizeInBytes, Locked: m.Locked, Creating: m.Creating,
		})
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].CreatedAt != list[j].CreatedAt {
			return list[i].CreatedAt < list[j].CreatedAt
		}
		return list[i].TxID.String() < list[j].TxID.String()
	})
	return &sliceIterator{list: list}, nil
}

type sliceIterator struct {
	list []*UnminedTransaction
	next int
}

func (it *sliceIterator) Next(ctx context.Context) (*UnminedTransaction, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if it.next >= len(it.list) {
		return nil, nil
	}
	it.next++
	return it.list[it.next-1], nil
}

// QueryOldUnminedTransactions implements Store.
func (db *DB) QueryOldUnminedTransactions(ctx context.Context, cutoffHeight uint32) ([]chainhash.Hash, error) {
	return db.scanUnmined(ctx, 1, cutoffHeight)
}

// scanUnmined lists the transactions unmined since a height in [lo, hi].
// Only masters carry unminedSince.
func (db *DB) scanUnmined(ctx context.Context, lo, hi uint32) ([]chainhash.Hash, error) {
	var txids []chainhash.Hash
	err := db.eng.Scan(ctx, engine.ByUnminedSince, lo, hi, func(k engine.Key, _ uint32) error {
		txids = append(txids, chainhash.Hash(k))
		return nil
	})
	if err != nil {
		return nil, storageErr("scanning unmined transactions", err)
	}
	sort.Slice(txids, func(i, j int) bool { return txids[i].String() < txids[j].String() })
	return txids, nil
}
