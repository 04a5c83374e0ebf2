package utxo

import (
	"context"
	"errors"
	"slices"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/utxo/model"
	"github.com/utxostore/utxostore/utxo/record"
)

// SetConflicting implements Store. Marking a transaction conflicting also
// records it among its parents' conflictingChildren, and schedules it for
// deletion. It returns the spends of the marked transactions (their
// inputs) and the transactions spending their outputs, so that a caller
// can walk down the descendants as the reference's markConflictingRecursively
// (process_conflicting.go) does. A spender the store does not hold (a
// Spend whose transaction was never created) is left out of them: marking
// it would be refused, and the next generation with it.
//
// The reference also writes the parents' conflictingChildren when
// unmarking; this store records a child there only when it is marked, so
// that the list keeps meaning "spenders marked conflicting".
func (db *DB) SetConflicting(ctx context.Context, txids []chainhash.Hash, conflicting bool) ([]*Spend, []chainhash.Hash, error) {
	if err := db.refuseMissing(ctx, txids); err != nil {
		return nil, nil, err
	}
	spends, spenders, err := db.setConflicting(ctx, txids, conflicting)
	if err != nil {
		return nil, nil, err
	}
	held, err := db.stored(ctx, spenders)
	if err != nil {
		return nil, nil, err
	}
	var next []chainhash.Hash
	for i, spender := range spenders {
		if held[i] {
			next = append(next, spender)
		}
	}
	return spends, next, nil
}

// setConflicting is SetConflicting for the block path, whose transactions
// are stored and which marks the spenders itself (withDescendants): it
// returns every spender of the marked outputs, and checks nothing first.
func (db *DB) setConflicting(ctx context.Context, txids []chainhash.Hash, conflicting bool) ([]*Spend, []chainhash.Hash, error) {
	height, retention := db.height.Load(), db.opts.BlockHeightRetention
	if err := db.applyToAllRecords(ctx, txids, func(r *record.Record) (record.Signal, error) {
		return r.SetConflicting(conflicting, height, retention), nil
	}); err != nil {
		return nil, nil, err
	}
	items := make([]*UnresolvedMetaData, len(txids))
	for i, txid := range txids {
		items[i] = &UnresolvedMetaData{TxID: txid}
	}
	if err := db.BatchDecorate(ctx, items, FieldTx, FieldOutputs); err != nil {
		return nil, nil, err
	}
	var spends []*Spend
	var parentOps []*recordOp
	var spenders []chainhash.Hash
	for _, it := range items {
		if it.Err != nil {
			return nil, nil, it.Err
		}
		for _, o := range it.Meta.Outputs {
			if o.SpendingData != nil && !slices.Contains(spenders, o.SpendingData.TxID) {
				spenders = append(spenders, o.SpendingData.TxID)
			}
		}
		// The inputs in their own order: the spending data names the input
		// index, which TxInpoints (grouped by parent) does not keep.
		txSpends, err := spendsOf(it.Meta.Tx, nil)
		if err != nil {
			return nil, nil, err
		}
		spends = append(spends, txSpends...)
		if !conflicting {
			continue
		}
		child := it.TxID
		for _, parent := range it.Meta.TxInpoints.ParentTxHashes {
			parentOps = append(parentOps, conflictingChildOp(parent, child))
		}
	}
	if err := db.applyAll(ctx, parentOps); err != nil {
		return nil, nil, err
	}
	return spends, spenders, nil
}

// conflictingChildOp records child among parent's conflictingChildren; a
// parent that is not stored is skipped, as the reference's update-only
// write skips it.
func conflictingChildOp(parent, child chainhash.Hash) *recordOp {
	return &recordOp{txid: parent, missingOK: true, op: func(r *record.Record) (record.Signal, error) {
		r.AddConflictingChild(child)
		return 0, nil
	}}
}

// applyAll applies ops and returns the first refusal, if any.
func (db *DB) applyAll(ctx context.Context, ops []*recordOp) error {
	if err := db.apply(ctx, ops); err != nil {
		return err
	}
	for _, o := range ops {
		if o.err != nil {
			return o.err
		}
	}
	return nil
}

// GetConflictingChildren implements Store: the transactions recorded in
// txid's conflictingChildren and those spending its outputs, and, down the
// generations, theirs (the reference's GetConflictingChildren in
// process_conflicting.go). A descendant the store does not hold is left
// out and ends its branch, where the reference fails the whole query: the
// list can be marked (SetConflicting) as it is.
func (db *DB) GetConflictingChildren(ctx context.Context, txid chainhash.Hash) ([]chainhash.Hash, error) {
	meta, err := db.Get(ctx, txid, FieldOutputs)
	if err != nil {
		return nil, err
	}
	return db.descendants(ctx, childrenOf(meta), map[chainhash.Hash]bool{txid: true})
}

// childrenOf lists the recorded conflicting children and the spenders of
// meta's outputs, without repeats.
func childrenOf(meta *Meta) []chainhash.Hash {
	children := slices.Clone(meta.ConflictingChildren)
	for _, spender := range spendersOf(meta) {
		if !slices.Contains(children, spender) {
			children = append(children, spender)
		}
	}
	return children
}

// spendersOf lists the transactions spending meta's outputs, one for each
// spent output.
func spendersOf(meta *Meta) []chainhash.Hash {
	var spenders []chainhash.Hash
	for _, o := range meta.Outputs {
		if o.SpendingData != nil {
			spenders = append(spenders, o.SpendingData.TxID)
		}
	}
	return spenders
}

// descendants returns roots and all their children (see childrenOf),
// breadth first, leaving out what seen already holds.
func (db *DB) descendants(ctx context.Context, roots []chainhash.Hash, seen map[chainhash.Hash]bool) ([]chainhash.Hash, error) {
	return db.walk(ctx, roots, seen, childrenOf)
}

// walk returns roots and, breadth first, the transactions that next names
// for each one it visits, each once, leaving out what seen already holds.
// A transaction the store does not hold (a Spend whose transaction was
// never created, or one deleted since) is left out and ends its branch:
// whoever marks the transactions walk returns marks only stored ones.
func (db *DB) walk(ctx context.Context, roots []chainhash.Hash, seen map[chainhash.Hash]bool, next func(*Meta) []chainhash.Hash) ([]chainhash.Hash, error) {
	var out []chainhash.Hash
	queue := slices.Clone(roots)
	for len(queue) > 0 {
		txid := queue[0]
		queue = queue[1:]
		if seen[txid] {
			continue
		}
		seen[txid] = true
		meta, err := db.Get(ctx, txid, FieldOutputs)
		if errors.Is(err, model.ErrTxNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, txid)
		queue = append(queue, next(meta)...)
	}
	return out, nil
}

// GetCounterConflicting implements Store: txid together with every
// transaction the store records as spending one of the outputs txid spends,
// and their descendants (the reference's GetCounterConflictingTxHashes). A
// parent that is not stored, or an output it holds unspent, adds nothing,
// nor does a spender or descendant the store does not hold (walk).
func (db *DB) GetCounterConflicting(ctx context.Context, txid chainhash.Hash) ([]chainhash.Hash, error) {
	meta, err := db.Get(ctx, txid, FieldOutputs)
	if err != nil {
		return nil, err
	}
	parents := make([]*UnresolvedMetaData, len(meta.TxInpoints.ParentTxHashes))
	for i, parent := range meta.TxInpoints.ParentTxHashes {
		parents[i] = &UnresolvedMetaData{TxID: parent}
	}
	if err := db.BatchDecorate(ctx, parents, FieldOutputs); err != nil {
		return nil, err
	}
	var spenders []chainhash.Hash
	for i, p := range parents {
		if p.Err != nil {
			continue
		}
		for _, vout := range meta.TxInpoints.Idxs[i] {
			if int(vout) < len(p.Meta.Outputs) {
				if sd := p.Meta.Outputs[vout].SpendingData; sd != nil {
					spenders = append(spenders, sd.TxID)
				}
			}
		}
	}
	rest, err := db.descendants(ctx, spenders, map[chainhash.Hash]bool{txid: true})
	if err != nil {
		return nil, err
	}
	return append([]chainhash.Hash{txid}, rest...), nil
}
