package utxo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/model"
	"github.com/utxostore/utxostore/utxo/record"
)

// Create implements Store. A transaction whose output values no chain
// accepts (chain.CheckOutputValues), or one that needs the blob store when
// the store has none, is refused with INVALID_PARAMETER before anything is
// written. A transaction created conflicting is first
// recorded among its parents' conflictingChildren (aerospike/create.go of
// the reference does the same). A transaction that fits one record is written
// with one create-only update. A larger one runs the lock record pattern:
// take the lock record, write the external blob, write every record with
// creating=true, release the lock, then clear creating on the children and
// last on the master, whose cleared flag marks the whole transaction
// committed.
//
// blockHeight is the height the transaction is stored at: an unmined one
// is unmined since it, and a delete-at-height counts from it. One below
// the store's height (a client's stale view, or a gRPC request that leaves
// it unset, which Teranode's validator also reads as the store's height)
// is taken as the store's height: the store knows its chain, and would
// otherwise take the transaction for older than it is, clean it up at the
// next block, or delete a conflicting one before its retention.
func (db *DB) Create(ctx context.Context, tx *chain.Tx, blockHeight uint32, opts ...CreateOption) (*Meta, error) {
	if err := checkValues(tx); err != nil {
		return nil, err
	}
	blockHeight = max(blockHeight, db.GetBlockHeight())
	o := NewCreateOptions(opts...)
	recs, external, err := db.buildRecords(tx, blockHeight, o)
	if err != nil {
		return nil, err
	}
	if external && db.opts.Blobs == nil {
		// Refused before the lock record is taken: nothing is written.
		return nil, model.NewError(model.CodeInvalidParameter, tx.ID, 0,
			"a transaction of %d bytes and %d outputs is stored in the blob store (above %d bytes or %d outputs), and this store has none",
			len(tx.Raw), len(tx.Msg.TxOut), db.opts.MaxTxSizeInStore, db.opts.UtxoBatchSize)
	}
	if o.Conflicting {
		// The parents learn of the conflicting child first, as the
		// reference's Create does: a failure here stores nothing.
		var ops []*recordOp
		for _, parent := range recs[0].TxInpoints.ParentTxHashes {
			ops = append(ops, conflictingChildOp(parent, tx.ID))
		}
		if err := db.applyAll(ctx, ops); err != nil {
			return nil, err
		}
	}
	if len(recs) == 1 && !external {
		if err := db.createSingle(ctx, tx.ID, recs[0]); err != nil {
			return nil, err
		}
	} else if err := db.createMulti(ctx, tx, recs, external); err != nil {
		return nil, err
	}
	return metaFromRecords(recs, nil), nil
}

// checkValues refuses, as INVALID_PARAMETER naming the output, a
// transaction whose output values no chain accepts (chain.CheckOutputValues):
// the store never holds a value below 0 or above the coins that can exist.
func checkValues(tx *chain.Tx) error {
	err := chain.CheckOutputValues(tx)
	var ve *chain.ValueError
	if errors.As(err, &ve) {
		return model.NewError(model.CodeInvalidParameter, tx.ID, uint32(ve.Output), "%s", strings.TrimPrefix(err.Error(), "chain: "))
	}
	return err
}

// buildRecords turns a transaction into its records.
func (db *DB) buildRecords(tx *chain.Tx, blockHeight uint32, o CreateOptions) ([]*record.Record, bool, error) {
	msg := tx.Msg
	coinbase := tx.IsCoinbase()
	if o.Coinbase != nil {
		coinbase = *o.Coinbase
	}
	hashes := make([]*chainhash.Hash, len(msg.TxOut))
	values := make([]chainhash.Hash, len(msg.TxOut)) // one allocation, not one per output
	for vout, out := range msg.TxOut {
		if !StoredAsUTXO(out) {
			continue
		}
		values[vout] = chainhash.Hash(chain.UTXOHash(tx.ID, uint32(vout), out.PkScript, uint64(out.Value)))
		hashes[vout] = &values[vout]
	}
	external := db.externalized(tx)
	var inpoints model.TxInpoints
	if !coinbase {
		outpoints := make([]model.Outpoint, len(msg.TxIn))
		for i, in := range msg.TxIn {
			outpoints[i] = model.Outpoint{TxID: in.PreviousOutPoint.Hash, Vout: in.PreviousOutPoint.Index}
		}
		inpoints = model.NewTxInpoints(outpoints)
	}
	params := record.BuildParams{
		TxID:          tx.ID,
		UtxoHashes:    hashes,
		Version:       uint32(msg.Version),
		LockTime:      msg.LockTime,
		Fee:           o.Fee,
		SizeInBytes:   uint64(len(tx.Raw)),
		TxInpoints:    inpoints,
		IsCoinbase:    coinbase,
		BatchSize:     db.opts.UtxoBatchSize,
		MinedBlocks:   o.MinedBlocks,
		Frozen:        o.Frozen,
		Conflicting:   o.Conflicting,
		Locked:        o.Locked,
		CurrentHeight: blockHeight,
		CreatedAt:     db.opts.Now().UnixMilli(),
		Retention:     db.opts.BlockHeightRetention,
	}
	if external {
		params.External = true
	} else {
		params.Tx = tx.Raw
	}
	// Anything beyond one self-contained record goes through the lock
	// record pattern, whose records are born with creating=true.
	params.Creating = external || record.NumRecords(len(msg.TxOut), db.opts.UtxoBatchSize) > 1
	recs, err := record.Build(params)
	if err != nil {
		return nil, false, err
	}
	return recs, recs[0].External, nil
}

// externalized reports whether tx's bytes go to the blob store rather than
// into its master record.
func (db *DB) externalized(tx *chain.Tx) bool {
	return db.opts.ExternalizeAllTransactions || len(tx.Raw) > db.opts.MaxTxSizeInStore ||
		len(tx.Msg.TxOut) > db.opts.UtxoBatchSize
}

// fitsOneRecord reports whether tx is stored as one self-contained record,
// written with one create-only update (no lock record, no blob).
func (db *DB) fitsOneRecord(tx *chain.Tx) bool {
	return !db.externalized(tx) && record.NumRecords(len(tx.Msg.TxOut), db.opts.UtxoBatchSize) == 1
}

// StoredAsUTXO reports whether the store keeps an output as a UTXO: every
// output except zero-value data carriers (OP_RETURN, or OP_FALSE
// OP_RETURN), which can never be spent, in coinbases too (the reference's
// ShouldStoreOutputAsUTXO in stores/utxo/utils.go): a coinbase carrying one
// is fully spent, and scheduled for deletion, once its other outputs are.
// Exported so that tools reasoning about the same UTXO set use the same
// rule.
func StoredAsUTXO(out *wire.TxOut) bool {
	if out.Value != 0 {
		return true
	}
	s := out.PkScript
	isData := (len(s) > 0 && s[0] == 0x6a) || (len(s) > 1 && s[0] == 0x00 && s[1] == 0x6a)
	return !isData
}

// createSingle writes a one-record transaction if it does not exist.
func (db *DB) createSingle(ctx context.Context, txid chainhash.Hash, r *record.Record) error {
	var arena encodeArena
	defer arena.release() // the engine has answered: the value is its copy
	value := arena.encode(r)
	errs, err := db.update(ctx, []engine.Update{{Key: engine.Key(record.MasterKey(txid)), Fn: func(current []byte) (engine.Mutation, error) {
		if current != nil {
			return engine.Mutation{}, txExists(txid)
		}
		return engine.Mutation{Action: engine.Put, Value: value, Terms: r.Terms()}, nil
	}}})
	if err != nil {
		return storageErr("creating "+txid.String(), err)
	}
	return errs[0]
}

func txExists(txid chainhash.Hash) error {
	return model.NewError(model.CodeTxExists, txid, 0, "transaction already in the store")
}

// createMulti runs the lock record pattern.
func (db *DB) createMulti(ctx context.Context, tx *chain.Tx, recs []*record.Record, external bool) error {
	txid := tx.ID
	lockKey := engine.Key(record.LockKey(txid))
	lock := newLockRecord(db.opts.Now(), len(recs))
	err := db.eng.CreateOnly(ctx, lockKey, lock.encode(), record.LockTTL(len(recs)))
	if err != nil {
		if errors.Is(err, engine.ErrExists) {
			return model.NewError(model.CodeTxExists, txid, 0, "another process is creating this transaction (its lock record exists)")
		}
		return storageErr("taking the lock record", err)
	}
	var committed bool
	if hook := db.faults.afterLock; hook != nil {
		err = hook()
	}
	if err == nil {
		committed, err = db.createPhaseOne(ctx, tx, recs, external)
	}
	// The lock is released whatever happened: partial records stay for the
	// next attempt to complete.
	if delErr := db.eng.Delete(ctx, []engine.Key{lockKey}); delErr != nil && err == nil {
		err = storageErr("releasing the lock record", delErr)
	}
	if err != nil {
		return err
	}
	if committed {
		return txExists(txid)
	}
	// Phase 2 failing leaves every record with creating set: the
	// transaction is stored but not yet spendable; Get reports it as
	// creating, and a retry or SetMinedMulti completes it. The lock record
	// pattern and the reference report success here; this store reports the
	// error so the caller knows to retry.
	return db.clearCreating(ctx, txid, uint32(len(recs)-1))
}

// createPhaseOne writes the blob and every record with creating=true. It
// returns committed=true when the transaction was already fully stored.
func (db *DB) createPhaseOne(ctx context.Context, tx *chain.Tx, recs []*record.Record, external bool) (committed bool, err error) {
	txid := tx.ID
	if external {
		if err := db.putBlob(ctx, tx); err != nil {
			return false, err
		}
	}
	if hook := db.faults.afterBlob; hook != nil {
		if err := hook(); err != nil {
			return false, err
		}
	}
	updates := make([]engine.Update, len(recs))
	for i, r := range recs {
		value, t := r.Encode(), r.Terms()
		master := i == 0
		updates[i] = engine.Update{Key: engine.Key(record.RecordKey(txid, uint32(i))), Fn: func(current []byte) (engine.Mutation, error) {
			if current == nil {
				return engine.Mutation{Action: engine.Put, Value: value, Terms: t}, nil
			}
			existing, err := record.Decode(current)
			if err != nil {
				return engine.Mutation{}, err
			}
			if master && !existing.Creating {
				return engine.Mutation{}, errAlreadyCommitted
			}
			// A record left by an interrupted attempt: keep it (it may
			// already carry spends or cleared flags) and complete it.
			return engine.Mutation{Action: engine.Keep}, nil
		}}
	}
	// Children first, master last, so the master's existence with
	// creating=true always means "every record was attempted".
	updates = append(updates[1:], updates[0])
	for k := range updates {
		if hook := db.faults.afterRecords; hook != nil {
			if err := hook(k); err != nil {
				return false, err
			}
		}
		errs, err := db.eng.Update(ctx, updates[k:k+1])
		if err != nil {
			return false, storageErr(fmt.Sprintf("writing record %d of %s", k, txid), err)
		}
		if errors.Is(errs[0], errAlreadyCommitted) {
			return true, nil
		}
		if errs[0] != nil {
			return false, errs[0]
		}
	}
	return false, nil
}

var errAlreadyCommitted = errors.New("transaction already committed")

// clearCreating is phase 2: children first, master last.
func (db *DB) clearCreating(ctx context.Context, txid chainhash.Hash, children uint32) error {
	clear := func(r *record.Record) (record.Signal, error) {
		r.Creating = false
		return 0, nil
	}
	var ops []*recordOp
	for i := uint32(1); i <= children; i++ {
		ops = append(ops, &recordOp{txid: txid, index: i, op: clear})
	}
	if err := db.apply(ctx, ops); err != nil {
		return err
	}
	for _, o := range ops {
		if o.err != nil {
			return o.err
		}
	}
	if hook := db.faults.beforeMasterCleared; hook != nil {
		if err := hook(); err != nil {
			return err
		}
	}
	master := []*recordOp{{txid: txid, index: 0, op: clear}}
	if err := db.apply(ctx, master); err != nil {
		return err
	}
	return master[0].err
}
