package utxo

import (
	"context"
	"errors"
	"slices"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/model"
	"github.com/utxostore/utxostore/utxo/record"
)

// SetMinedMulti implements Store. Masters are updated in one batch; the
// child records of paginated transactions then get the same change (it
// clears their locked and creating flags, completing an interrupted
// multi-record create). With info.UnsetMined a transaction that is not
// stored is skipped, as aerospike/set_mined.go skips TX_NOT_FOUND there;
// otherwise it is TX_NOT_FOUND, and nothing is marked (refuseMissing).
func (db *DB) SetMinedMulti(ctx context.Context, txids []chainhash.Hash, info model.MinedBlockInfo) (map[chainhash.Hash][]uint32, error) {
	if !info.UnsetMined {
		if err := db.refuseMissing(ctx, txids); err != nil {
			return nil, err
		}
	}
	blockIDs := make(map[chainhash.Hash][]uint32, len(txids))
	err := db.setMined(ctx, txids, info, func(txid chainhash.Hash, after *record.Record) {
		blockIDs[txid] = slices.Clone(after.BlockIDs)
	})
	return blockIDs, err
}

// setMined is SetMinedMulti, reporting each updated transaction's master
// record, as written less its outputs and transaction, to minedIn when it
// is given.
func (db *DB) setMined(ctx context.Context, txids []chainhash.Hash, info model.MinedBlockInfo, minedIn func(chainhash.Hash, *record.Record)) error {
	next, retention := db.height.Load()+1, db.opts.BlockHeightRetention
	// SetMined changes only a record's head: the outputs and the
	// transaction are copied, never decoded.
	setMined := func(v *record.View) (record.Signal, error) {
		return v.SetMined(info, next, retention), nil
	}
	masters := newRecordOps(len(txids))
	for i, txid := range txids {
		// Unsetting a block on a transaction that is not stored has
		// nothing to undo: a no-op, as in the reference.
		*masters[i] = recordOp{txid: txid, onView: setMined, missingOK: info.UnsetMined}
	}
	if err := db.apply(ctx, masters); err != nil {
		return err
	}
	var children []*recordOp
	var errs []error
	for _, m := range masters {
		if m.err != nil {
			errs = append(errs, m.err)
			continue
		}
		if m.after == nil {
			continue // missing, and unsetting
		}
		if minedIn != nil {
			minedIn(m.txid, m.after)
		}
		for i := uint32(1); i <= m.after.TotalExtraRecs; i++ {
			children = append(children, &recordOp{txid: m.txid, index: i, missingOK: true, onView: setMined})
		}
	}
	if err := db.apply(ctx, children); err != nil {
		return err
	}
	if err := db.settle(ctx, masters); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// MarkTransactionsOnLongestChain implements Store: a transaction on the
// longest chain is mined (unminedSince 0); off it, it is unmined since the
// store height. Its delete-at-height is left as it is.
func (db *DB) MarkTransactionsOnLongestChain(ctx context.Context, txids []chainhash.Hash, onLongestChain bool) error {
	if err := db.refuseMissing(ctx, txids); err != nil {
		return err
	}
	height := db.height.Load()
	return db.applyToMasters(ctx, txids, func(r *record.Record) (record.Signal, error) {
		r.MarkOnLongestChain(onLongestChain, height)
		return 0, nil
	})
}

// SetLocked implements Store.
func (db *DB) SetLocked(ctx context.Context, txids []chainhash.Hash, locked bool) error {
	if err := db.refuseMissing(ctx, txids); err != nil {
		return err
	}
	return db.applyToAllRecords(ctx, txids, func(r *record.Record) (record.Signal, error) {
		return r.SetLocked(locked), nil
	})
}

// refuseMissing refuses, before anything is written, a call naming
// transactions the store does not hold: TX_NOT_FOUND for each. A call
// that marks several transactions then marks all of them or none, as a
// refused call changes nothing (but for one deleted between this read and
// the write, which is TX_NOT_FOUND after the others are marked).
func (db *DB) refuseMissing(ctx context.Context, txids []chainhash.Hash) error {
	held, err := db.stored(ctx, txids)
	if err != nil {
		return err
	}
	var missing []error
	for i, ok := range held {
		if !ok {
			missing = append(missing, notFound(txids[i]))
		}
	}
	return errors.Join(missing...)
}

// stored says, for each of txids, whether the store holds it.
func (db *DB) stored(ctx context.Context, txids []chainhash.Hash) ([]bool, error) {
	keys := make([]engine.Key, len(txids))
	for i, txid := range txids {
		keys[i] = engine.Key(record.MasterKey(txid))
	}
	values, err := db.eng.Get(ctx, keys)
	if err != nil {
		return nil, storageErr("reading the transactions named", err)
	}
	held := make([]bool, len(values))
	for i, v := range values {
		held[i] = v != nil
	}
	return held, nil
}

// applyToMasters runs op on the master record of every transaction, then
// follows the signals.
func (db *DB) applyToMasters(ctx context.Context, txids []chainhash.Hash, op func(*record.Record) (record.Signal, error)) error {
	ops := make([]*recordOp, len(txids))
	for i, txid := range txids {
		ops[i] = &recordOp{txid: txid, op: op}
	}
	return db.applyAndSettle(ctx, ops)
}

// applyToAllRecords runs op on the master and then on every child record of
// each transaction: flags that every record carries (locked, conflicting).
func (db *DB) applyToAllRecords(ctx context.Context, txids []chainhash.Hash, op func(*record.Record) (record.Signal, error)) error {
	masters := make([]*recordOp, len(txids))
	for i, txid := range txids {
		masters[i] = &recordOp{txid: txid, op: op}
	}
	if err := db.apply(ctx, masters); err != nil {
		return err
	}
	var errs []error
	var children []*recordOp
	for _, m := range masters {
		if m.err != nil {
			errs = append(errs, m.err)
			continue
		}
		for i := uint32(1); i <= m.after.TotalExtraRecs; i++ {
			children = append(children, &recordOp{txid: m.txid, index: i, missingOK: true, op: op})
		}
	}
	if err := db.apply(ctx, children); err != nil {
		return err
	}
	return errors.Join(append(errs, db.settle(ctx, masters))...)
}
