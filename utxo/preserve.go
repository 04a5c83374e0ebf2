package utxo

import (
	"context"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/record"
)

// PreserveTransactions implements Store: the transactions (parents of
// unmined ones) are kept until preserveUntil whatever their spent state; a
// missing transaction is skipped.
func (db *DB) PreserveTransactions(ctx context.Context, txids []chainhash.Hash, preserveUntil uint32) error {
	ops := make([]*recordOp, len(txids))
	for i, txid := range txids {
		ops[i] = &recordOp{txid: txid, missingOK: true, op: func(r *record.Record) (record.Signal, error) {
			return r.Preserve(preserveUntil), nil
		}}
	}
	return db.applyAndSettle(ctx, ops)
}

// ProcessExpiredPreservations implements Store: preservations that ended
// at or before currentHeight are lifted and the delete-at-height rule runs
// again, so fully spent transactions become prunable.
func (db *DB) ProcessExpiredPreservations(ctx context.Context, currentHeight uint32) error {
	var txids []chainhash.Hash
	err := db.eng.Scan(ctx, engine.ByPreserveUntil, 1, currentHeight, func(k engine.Key, _ uint32) error {
		txids = append(txids, chainhash.Hash(k))
		return nil
	})
	if err != nil {
		return storageErr("scanning preservations", err)
	}
	retention := db.opts.BlockHeightRetention
	ops := make([]*recordOp, 0, len(txids))
	for _, txid := range txids {
		ops = append(ops, &recordOp{txid: txid, missingOK: true, op: func(r *record.Record) (record.Signal, error) {
			if !r.IsMaster() {
				return 0, nil // children follow their master
			}
			lifted := r.PreserveUntil != 0
			sig := r.ExpirePreserve(currentHeight, retention)
			if lifted && r.PreserveUntil == 0 {
				sig |= record.SignalPreserve // children mirror the lifted preservation
			}
			return sig, nil
		}})
	}
	if err := db.apply(ctx, ops); err != nil {
		return err
	}
	return db.settle(ctx, ops)
}
