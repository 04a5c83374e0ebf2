package utxo

import (
	"bytes"
	"context"
	"errors"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/record"
)

// recordOp is one state-machine operation on one stored record, run inside
// the engine's atomic read-modify-write. After apply it holds the outcome.
type recordOp struct {
	txid  chainhash.Hash
	index uint32 // record index: 0 master, 1.. child
	// op mutates the decoded record; an error leaves the record unchanged.
	op func(r *record.Record) (record.Signal, error)
	// onView, when set, is the op instead, for the operations a View
	// runs (spend, set-mined): the record is inspected rather than
	// decoded, and what the op leaves alone is copied as it is.
	onView func(v *record.View) (record.Signal, error)
	// missingOK makes a missing record a no-op instead of TX_NOT_FOUND.
	missingOK bool
	// arena, when set, holds the new encoding; see encodeArena.
	arena *encodeArena
	// view is the record as updateView inspects it, held in the op (one
	// allocation for a call's ops) rather than in one of its own per
	// record: after points at its head.
	view record.View

	// Outcome.
	signal  record.Signal
	after   *record.Record // the record as written, unshared: less its Utxos, Tx and inpoints (nil if missing or failed)
	changed bool           // the operation changed the stored bytes
	err     error
}

// newRecordOps returns n zero ops, held in one allocation: a block makes
// thousands.
func newRecordOps(n int) []*recordOp {
	slab := make([]recordOp, n)
	ops := make([]*recordOp, n)
	for i := range ops {
		ops[i] = &slab[i]
	}
	return ops
}

// errUnchanged is what an op returns when it left the record exactly as it
// was (an idempotent re-spend, say): the record is then neither encoded
// again nor written. It is no failure.
var errUnchanged = errors.New("record unchanged")

func (o *recordOp) key() engine.Key {
	return engine.Key(record.RecordKey(o.txid, o.index))
}

// update is the engine UpdateFunc of the op. The engine may call it more than
// once (optimistic retries); each call starts the outcome afresh.
func (o *recordOp) update(current []byte) (engine.Mutation, error) {
	o.signal, o.after, o.changed = 0, nil, false
	if current == nil {
		if o.missingOK {
			return engine.Mutation{Action: engine.Keep}, nil
		}
		return engine.Mutation{}, notFound(o.txid)
	}
	if o.onView != nil {
		return o.updateView(current)
	}
	// current is only lent for this call: the record shares its outputs,
	// transaction bytes and inpoints, which after drops before keeping the
	// rest.
	r, err := record.DecodeForUpdate(current)
	if err != nil {
		return engine.Mutation{}, err
	}
	sig, err := o.op(r)
	if errors.Is(err, errUnchanged) {
		r.Unshare()
		o.signal, o.after = sig, r
		return engine.Mutation{Action: engine.Keep}, nil
	}
	if err != nil {
		return engine.Mutation{}, err
	}
	var next []byte
	if o.arena != nil {
		next = o.arena.encode(r)
	} else {
		next = r.Encode()
	}
	r.Unshare()
	o.signal, o.after = sig, r
	if bytes.Equal(next, current) {
		return engine.Mutation{Action: engine.Keep}, nil
	}
	o.changed = true
	return engine.Mutation{Action: engine.Put, Value: next, Terms: r.Terms()}, nil
}

// updateView is update for an op on a View of the record.
func (o *recordOp) updateView(current []byte) (engine.Mutation, error) {
	var err error
	if o.view, err = record.Inspect(current); err != nil {
		return engine.Mutation{}, err
	}
	v := &o.view
	sig, err := o.onView(v)
	if errors.Is(err, errUnchanged) {
		o.signal, o.after = sig, v.Head()
		return engine.Mutation{Action: engine.Keep}, nil
	}
	if err != nil {
		return engine.Mutation{}, err
	}
	var next []byte
	if o.arena != nil {
		next = o.arena.encode(v)
	} else {
		next = v.AppendEncode(nil)
	}
	o.signal, o.after = sig, v.Head()
	if bytes.Equal(next, current) {
		return engine.Mutation{Action: engine.Keep}, nil
	}
	o.changed = true
	return engine.Mutation{Action: engine.Put, Value: next, Terms: o.after.Terms()}, nil
}

// apply runs ops as one engine batch and records each op's error. The
// returned error is an engine failure (STORAGE_ERROR); per-op refusals are in
// the ops. Signals are not followed here; see settle.
func (db *DB) apply(ctx context.Context, ops []*recordOp) error {
	if len(ops) == 0 {
		return nil
	}
	var arena encodeArena
	defer arena.release() // the engine has answered: the values are its copies
	updates := make([]engine.Update, len(ops))
	for i, o := range ops {
		o.arena = &arena
		updates[i] = engine.Update{Key: o.key(), Fn: o.update}
	}
	errs, err := db.update(ctx, updates)
	for _, o := range ops {
		o.arena = nil
	}
	if err != nil {
		return storageErr("updating records", err)
	}
	for i, o := range ops {
		o.err = errs[i]
	}
	return nil
}

// applyAndSettle applies ops in one batch and follows their signals
// (settle); it returns the error of every op that failed and settle's.
func (db *DB) applyAndSettle(ctx context.Context, ops []*recordOp) error {
	if err := db.apply(ctx, ops); err != nil {
		return err
	}
	errs := make([]error, 0, len(ops)+1)
	for _, o := range ops {
		errs = append(errs, o.err)
	}
	return errors.Join(append(errs, db.settle(ctx, ops))...)
}

// settle follows the signals of applied ops until none is left: a child
// that became (or stopped being) fully spent updates its master's
// SpentExtraRecs; a master whose delete-at-height was set, cleared or
// replaced by a preservation passes it on to its children and its external
// blob. Each round is one engine batch.
func (db *DB) settle(ctx context.Context, ops []*recordOp) error {
	for len(ops) > 0 {
		var next []*recordOp
		for _, o := range ops {
			if o.err != nil || o.after == nil || o.signal == 0 {
				continue
			}
			next = append(next, db.followUps(ctx, o)...)
		}
		if err := db.apply(ctx, next); err != nil {
			return err
		}
		for _, o := range next {
			if o.err != nil {
				return o.err
			}
		}
		ops = next
	}
	return nil
}

// followUps returns the operations a signal asks for.
func (db *DB) followUps(ctx context.Context, o *recordOp) []*recordOp {
	r := o.after
	height, retention := db.height.Load(), db.opts.BlockHeightRetention
	var ops []*recordOp
	if !r.IsMaster() {
		delta := 0
		switch {
		case o.signal.Has(record.SignalAllSpent):
			delta = 1
		case o.signal.Has(record.SignalNotAllSpent):
			delta = -1
		}
		if delta != 0 {
			ops = append(ops, &recordOp{txid: o.txid, index: 0, op: func(m *record.Record) (record.Signal, error) {
				return m.IncrementSpentExtraRecs(delta, height, retention)
			}})
		}
		return ops
	}
	if !o.signal.Has(record.SignalDAHSet) && !o.signal.Has(record.SignalDAHUnset) && !o.signal.Has(record.SignalPreserve) {
		return nil
	}
	dah, preserve := r.DeleteAtHeight, r.PreserveUntil
	for i := uint32(1); i <= r.TotalExtraRecs; i++ {
		ops = append(ops, &recordOp{txid: o.txid, index: i, missingOK: true, op: func(c *record.Record) (record.Signal, error) {
			// Children mirror the master's retention exactly.
			c.DeleteAtHeight, c.PreserveUntil = dah, preserve
			return 0, nil
		}})
	}
	if r.External && db.opts.Blobs != nil {
		db.setBlobDAH(ctx, o.txid, dah)
	}
	return ops
}
