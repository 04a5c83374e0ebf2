package utxo

import (
	"context"
	"errors"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/model"
	"github.com/utxostore/utxostore/utxo/record"
)

// PruneResult says what a pruning pass removed.
type PruneResult struct {
	Records int `json:"records"`
	Blobs   int `json:"blobs"`
}

// Prune deletes every record whose delete-at-height has been reached at
// height (child records carry their master's), with the external blobs of
// the transactions removed; each removed transaction is recorded in its
// parents' deletedChildren first. A crash between the two writes then
// leaves parents listing a transaction still stored, which no reader
// consults, rather than a transaction gone that its parents do not list,
// whose spends would read as never created. Each record is re-checked
// inside its atomic update, so one whose deletion was cancelled since the
// scan is kept.
func (db *DB) Prune(ctx context.Context, height uint32) (PruneResult, error) {
	var keys []engine.Key
	err := db.eng.Scan(ctx, engine.ByDeleteAtHeight, 1, height, func(k engine.Key, _ uint32) error {
		keys = append(keys, k)
		return nil
	})
	if err != nil {
		return PruneResult{}, storageErr("scanning delete-at-height", err)
	}
	due := func(r *record.Record) bool {
		return r.DeleteAtHeight != 0 && r.DeleteAtHeight <= height && r.PreserveUntil == 0
	}
	found, err := db.readRecords(ctx, keys)
	if err != nil {
		return PruneResult{}, err
	}
	var parentOps []*recordOp
	for _, f := range found {
		switch {
		case errors.Is(f.err, errMissing):
		case f.err != nil:
			return PruneResult{}, f.err
		case f.rec.IsMaster() && due(f.rec):
			parentOps = append(parentOps, db.deletedChildOps(f.rec.TxInpoints, f.rec.TxID)...)
		}
	}
	if err := db.applyAll(ctx, parentOps); err != nil {
		return PruneResult{}, err
	}
	var res PruneResult
	external := make([]*chainhash.Hash, len(keys))
	removed := make([]bool, len(keys))
	updates := make([]engine.Update, len(keys))
	for i, k := range keys {
		updates[i] = engine.Update{Key: k, Fn: func(current []byte) (engine.Mutation, error) {
			external[i], removed[i] = nil, false
			if current == nil {
				return engine.Mutation{Action: engine.Keep}, nil
			}
			r, err := record.Decode(current)
			if err != nil {
				return engine.Mutation{}, err
			}
			if !due(r) {
				return engine.Mutation{Action: engine.Keep}, nil
			}
			if r.IsMaster() && r.External {
				txid := r.TxID
				external[i] = &txid
			}
			removed[i] = true
			return engine.Mutation{Action: engine.Remove}, nil
		}}
	}
	errs, err := db.eng.Update(ctx, updates)
	if err != nil {
		return res, storageErr("pruning", err)
	}
	for i := range keys {
		if errs[i] != nil {
			return res, errs[i]
		}
		if removed[i] {
			res.Records++
		}
		if external[i] != nil {
			if err := db.deleteBlobs(ctx, *external[i]); err != nil {
				return res, storageErr("deleting a pruned blob", err)
			}
			res.Blobs++
		}
	}
	if db.opts.Blobs != nil {
		// Blobs scheduled on their own (their record already gone).
		n, err := db.opts.Blobs.Prune(ctx, height)
		if err != nil {
			return res, storageErr("pruning blobs", err)
		}
		res.Blobs += n
	}
	return res, nil
}

// withoutRefusals is err less the store's refusals it joins (isRefusal):
// what failed.
func withoutRefusals(err error) error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var failed []error
		for _, e := range joined.Unwrap() {
			if e = withoutRefusals(e); e != nil {
				failed = append(failed, e)
			}
		}
		return errors.Join(failed...)
	}
	if isRefusal(err) {
		return nil
	}
	return err
}

// deletedChildOps record child, a pruned transaction spending inpoints,
// in the deletedChildren of every parent record holding one of those
// outputs (one op per record), as the reference's cleanup service does, so
// that a later re-spend by the deleted child is refused. Parents already
// gone are skipped.
func (db *DB) deletedChildOps(inpoints model.TxInpoints, child chainhash.Hash) []*recordOp {
	var ops []*recordOp
	seen := map[engine.Key]bool{}
	for _, op := range inpoints.Outpoints() {
		index := record.RecordIndex(op.Vout, db.opts.UtxoBatchSize)
		key := engine.Key(record.RecordKey(op.TxID, index))
		if seen[key] {
			continue
		}
		seen[key] = true
		ops = append(ops, &recordOp{txid: op.TxID, index: index, missingOK: true, op: func(r *record.Record) (record.Signal, error) {
			r.AddDeletedChild(child)
			return 0, nil
		}})
	}
	return ops
}

// CleanupOldUnmined removes the transactions that have stayed unmined for
// the unmined retention at height: their parents are preserved for
// ParentPreservation blocks (a parent must outlive a child that may yet be
// re-submitted), the outputs they spent are released, and they are deleted.
// The block processor runs it at every block. It returns the removed
// transactions.
func (db *DB) CleanupOldUnmined(ctx context.Context, height uint32) ([]chainhash.Hash, error) {
	if height <= db.opts.UnminedRetention {
		return nil, nil
	}
	old, err := db.QueryOldUnminedTransactions(ctx, height-db.opts.UnminedRetention)
	if err != nil || len(old) == 0 {
		return nil, err
	}
	items := make([]*UnresolvedMetaData, len(old))
	for i, txid := range old {
		items[i] = &UnresolvedMetaData{TxID: txid}
	}
	if err := db.BatchDecorate(ctx, items, FieldTx); err != nil {
		return nil, err
	}
	var parents, removed []chainhash.Hash
	var spends []*Spend
	for _, it := range items {
		if it.Err != nil {
			continue
		}
		parents = append(parents, it.Meta.TxInpoints.ParentTxHashes...)
		txSpends, err := spendsOf(it.Meta.Tx, nil)
		if err != nil {
			return nil, err
		}
		spends = append(spends, txSpends...)
	}
	if err := db.PreserveTransactions(ctx, parents, height+db.opts.ParentPreservation); err != nil {
		return nil, err
	}
	// The outputs they spent become spendable again. A parent already
	// gone, or an output one does not hold (it never spent it, or names an
	// output that does not exist: Create checks no input), has nothing to
	// release; only a failing write stops the block.
	if err := withoutRefusals(db.unspendAll(ctx, spends, false)); err != nil {
		return nil, err
	}
	var errs []error
	for _, it := range items {
		if it.Err != nil {
			continue
		}
		if err := db.deleteTx(ctx, it.TxID, true); err != nil && !errors.Is(err, model.ErrTxNotFound) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, it.TxID)
	}
	return removed, errors.Join(errs...)
}
