package utxo

import (
	"context"
	"fmt"
	"slices"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/record"
)

// setTx is a transaction of the UTXO set as the walk of the set meets it:
// its transaction, and what its master record says of it.
type setTx struct {
	tx *chain.Tx
	// height is the height of the block that mined it: the highest of its
	// blocks, all of the longest chain when the block processor built it
	// (two early Bitcoin coinbases were mined twice, and Bitcoin Core keeps
	// the later).
	height   uint32
	coinbase bool
}

// walkSet calls fn with every record of the transactions in the UTXO set
// of the longest chain: mined on it and not conflicting. Their unspent
// outputs (frozen ones included) are the set. The child records of a
// transaction wider than one record need their master's verdict and
// transaction: they come after every master.
func (db *DB) walkSet(ctx context.Context, fn func(r *record.Record, st *setTx) error) error {
	var children []*record.Record
	wide := map[chainhash.Hash]*setTx{} // in the set, with child records
	var fnErr error                     // fn's own, returned as it is
	err := db.eng.ForEach(ctx, func(k engine.Key, v []byte) error {
		r, err := record.Decode(v)
		if err != nil {
			if isLockRecord(v) {
				return nil
			}
			return fmt.Errorf("record %x: %w", k, err)
		}
		if !r.IsMaster() {
			children = append(children, r)
			return nil
		}
		if !r.MinedOnLongestChain() {
			return nil
		}
		tx, err := db.txOf(ctx, r)
		if err != nil {
			return err
		}
		st := &setTx{tx: tx, height: slices.Max(r.BlockHeights), coinbase: r.IsCoinbase}
		if len(tx.Msg.TxOut) > len(r.Utxos) {
			wide[r.TxID] = st
		}
		fnErr = fn(r, st)
		return fnErr
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return storageErr("walking the records", err)
	}
	for _, r := range children {
		if st := wide[r.TxID]; st != nil {
			if err := fn(r, st); err != nil {
				return err
			}
		}
	}
	return nil
}
