package utxo

import (
	"context"
	"errors"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/utxo/model"
	"github.com/utxostore/utxostore/utxo/record"
)

// FreezeUTXOs implements Store. Each output goes straight to the record that
// holds it; each Spend carries its own outcome.
func (db *DB) FreezeUTXOs(ctx context.Context, spends []*Spend) error {
	return db.perOutput(ctx, spends, func(r *record.Record, offset uint32, hash chainhash.Hash, _ *Spend) (record.Signal, error) {
		return 0, r.Freeze(offset, hash)
	})
}

// UnFreezeUTXOs implements Store.
func (db *DB) UnFreezeUTXOs(ctx context.Context, spends []*Spend) error {
	return db.perOutput(ctx, spends, func(r *record.Record, offset uint32, hash chainhash.Hash, _ *Spend) (record.Signal, error) {
		return 0, r.UnFreeze(offset, hash)
	})
}

// ReAssignUTXO implements Store: the frozen output utxo gets newUtxo's hash
// and becomes spendable ReassignmentDelay blocks after the current height.
func (db *DB) ReAssignUTXO(ctx context.Context, utxo *Spend, newUtxo *Spend) error {
	if newUtxo == nil || newUtxo.UTXOHash == nil {
		return model.NewError(model.CodeInvalidParameter, utxo.TxID, utxo.Vout, "reassignment needs the new UTXO hash")
	}
	height := db.height.Load()
	newHash := *newUtxo.UTXOHash
	return db.perOutput(ctx, []*Spend{utxo}, func(r *record.Record, offset uint32, hash chainhash.Hash, _ *Spend) (record.Signal, error) {
		return 0, r.Reassign(offset, hash, newHash, height, ReassignmentDelay)
	})
}

// perOutput applies op to the record holding each output, in one batch, and
// reports each output's outcome in its Spend.
func (db *DB) perOutput(ctx context.Context, spends []*Spend, op func(r *record.Record, offset uint32, hash chainhash.Hash, sp *Spend) (record.Signal, error)) error {
	ops := make([]*recordOp, len(spends))
	for i, sp := range spends {
		idx, offset := record.Locate(sp.Vout, db.opts.UtxoBatchSize)
		ops[i] = &recordOp{txid: sp.TxID, index: idx, op: func(r *record.Record) (record.Signal, error) {
			return op(r, offset, claimedHash(entryOf(r, offset), sp.UTXOHash), sp)
		}}
	}
	if err := db.apply(ctx, ops); err != nil {
		return err
	}
	var errs []error
	for i, o := range ops {
		if o.err != nil {
			spends[i].Err = outputErr(o.err, spends[i])
			errs = append(errs, spends[i].Err)
		}
	}
	return errors.Join(append(errs, db.settle(ctx, ops))...)
}
