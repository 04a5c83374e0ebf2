package utxo

import (
	"context"
	"errors"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/record"
)

// spendsOf lists the outputs tx's inputs consume. previous, when given, holds
// the output each input claims to spend, from which the claimed UTXO hash is
// computed.
func spendsOf(tx *chain.Tx, previous []*wire.TxOut) ([]*Spend, error) {
	if tx.IsCoinbase() {
		return nil, nil
	}
	if previous != nil && len(previous) != len(tx.Msg.TxIn) {
		return nil, record.NewError(record.CodeInvalidParameter, tx.ID, 0,
			"%d previous outputs given for %d inputs", len(previous), len(tx.Msg.TxIn))
	}
	spends := make([]*Spend, len(tx.Msg.TxIn))
	for vin, in := range tx.Msg.TxIn {
		sp := &Spend{
			TxID:         in.PreviousOutPoint.Hash,
			Vout:         in.PreviousOutPoint.Index,
			SpendingData: &SpendingData{TxID: tx.ID, Vin: uint32(vin)},
		}
		if previous != nil && previous[vin] != nil {
			out := previous[vin]
			h := chainhash.Hash(chain.UTXOHash(sp.TxID, sp.Vout, out.PkScript, uint64(out.Value)))
			sp.UTXOHash = &h
		}
		spends[vin] = sp
	}
	return spends, nil
}

// Spend implements Store.
func (db *DB) Spend(ctx context.Context, tx *chain.Tx, opts ...SpendOption) ([]*Spend, error) {
	o := spendOptions{blockHeight: db.height.Load() + 1}
	for _, opt := range opts {
		opt(&o)
	}
	spends, err := spendsOf(tx, o.previousOutputs)
	if err != nil {
		return nil, err
	}
	return spends, db.spendAll(ctx, spends, o)
}

// spendAll spends every output or none: when any spend is refused, the
// spends this call applied are undone and every Spend carries its outcome.
func (db *DB) spendAll(ctx context.Context, spends []*Spend, o spendOptions) error {
	ropts := record.SpendOptions{
		CurrentHeight:     o.blockHeight,
		Retention:         db.opts.BlockHeightRetention,
		IgnoreConflicting: o.ignoreConflicting,
		IgnoreLocked:      o.ignoreLocked,
	}
	ops := make([]*recordOp, len(spends))
	for i, sp := range spends {
		idx, offset := record.Locate(sp.Vout, db.opts.UtxoBatchSize)
		ops[i] = &recordOp{txid: sp.TxID, index: idx, op: func(r *record.Record) (record.Signal, error) {
			return r.Spend(offset, claimedHash(r, offset, sp.UTXOHash), *sp.SpendingData, ropts)
		}}
	}
	if err := db.apply(ctx, ops); err != nil {
		return err
	}
	var first error
	for i, op := range ops {
		spends[i].Err = outputErr(op.err, spends[i])
		if first == nil && spends[i].Err != nil {
			first = spends[i].Err
		}
	}
	if first == nil {
		return db.settle(ctx, ops)
	}
	// All or nothing: undo what this call changed, and only that (an
	// idempotent re-spend changed nothing and must stay).
	var undo []*Spend
	var applied []*recordOp
	for i, op := range ops {
		if op.err == nil && op.changed {
			undo = append(undo, spends[i])
			applied = append(applied, op)
		}
	}
	if err := db.settle(ctx, applied); err != nil {
		return errors.Join(first, err)
	}
	if err := db.unspendAll(ctx, undo, false); err != nil {
		return errors.Join(first, err)
	}
	return first
}

// claimedHash is the UTXO hash a spend is checked against: the spender's
// claim, or, when it makes none, the stored hash (nothing to check).
func claimedHash(r *record.Record, offset uint32, claim *chainhash.Hash) chainhash.Hash {
	if claim != nil {
		return *claim
	}
	if int(offset) < len(r.Utxos) {
		return r.Utxos[offset].Hash()
	}
	return chainhash.Hash{}
}

// outputErr names the output in a record-level error and fills the
// conflicting transaction of a SPENT error into the Spend.
func outputErr(err error, sp *Spend) error {
	var e *record.Error
	if !errors.As(err, &e) {
		return err
	}
	if e.Spending != nil {
		id := e.Spending.TxID
		sp.ConflictingTxID = &id
	}
	if e.TxID != sp.TxID || e.Vout != sp.Vout {
		c := *e
		c.TxID, c.Vout = sp.TxID, sp.Vout
		return &c
	}
	return err
}

// Unspend implements Store.
func (db *DB) Unspend(ctx context.Context, spends []*Spend, flagAsLocked bool) error {
	return db.unspendAll(ctx, spends, flagAsLocked)
}

// unspendAll reverses spends. A spend that names its spending data only
// undoes that spender's spend: a rollback never wipes someone else's.
func (db *DB) unspendAll(ctx context.Context, spends []*Spend, flagAsLocked bool) error {
	uopts := record.UnspendOptions{
		CurrentHeight: db.height.Load(),
		Retention:     db.opts.BlockHeightRetention,
		FlagAsLocked:  flagAsLocked,
	}
	ops := make([]*recordOp, len(spends))
	for i, sp := range spends {
		idx, offset := record.Locate(sp.Vout, db.opts.UtxoBatchSize)
		o := uopts
		o.Expected = sp.SpendingData
		ops[i] = &recordOp{txid: sp.TxID, index: idx, op: func(r *record.Record) (record.Signal, error) {
			return r.Unspend(offset, claimedHash(r, offset, sp.UTXOHash), o)
		}}
	}
	if err := db.apply(ctx, ops); err != nil {
		return err
	}
	var errs []error
	for i, op := range ops {
		if op.err != nil {
			spends[i].Err = outputErr(op.err, spends[i])
			errs = append(errs, spends[i].Err)
		}
	}
	return errors.Join(append(errs, db.settle(ctx, ops))...)
}

// GetSpend implements Store.
func (db *DB) GetSpend(ctx context.Context, sp *Spend) (*SpendResponse, error) {
	idx, offset := record.Locate(sp.Vout, db.opts.UtxoBatchSize)
	r, err := db.readRecord(ctx, sp.TxID, idx)
	if err != nil {
		return nil, err
	}
	resp := &SpendResponse{LockTime: r.LockTime}
	if int(offset) >= len(r.Utxos) || !r.Utxos[offset].Stored() {
		return resp, record.NewError(record.CodeUtxoNotFound, sp.TxID, sp.Vout, "no such output")
	}
	e := r.Utxos[offset]
	if sp.UTXOHash != nil && !e.HashEquals(sp.UTXOHash) {
		return resp, record.NewError(record.CodeUtxoHashMismatch, sp.TxID, sp.Vout, "stored UTXO hash differs")
	}
	resp.SpendableIn = r.UtxoSpendableIn[offset]
	switch {
	case e.IsFrozen():
		resp.Status = StatusFrozen
	case e.IsSpent():
		resp.Status = StatusSpent
		data, _ := e.SpendingData()
		resp.SpendingData = &data
	case r.Conflicting:
		resp.Status = StatusConflicting
	case r.Locked || r.Creating:
		resp.Status = StatusLocked
	case r.SpendingHeight > db.height.Load()+1:
		resp.Status = StatusImmature
	default:
		resp.Status = StatusUnspent
	}
	return resp, nil
}

// readRecord reads and decodes one record.
func (db *DB) readRecord(ctx context.Context, txid chainhash.Hash, index uint32) (*record.Record, error) {
	values, err := db.eng.Get(ctx, []engine.Key{engine.Key(record.RecordKey(txid, index))})
	if err != nil {
		return nil, storageErr("reading "+txid.String(), err)
	}
	if values[0] == nil {
		return nil, notFound(txid)
	}
	return record.Decode(values[0])
}
