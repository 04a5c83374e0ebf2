package utxo

import (
	"context"
	"errors"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/model"
	"github.com/utxostore/utxostore/utxo/record"
)

// Get implements Store.
func (db *DB) Get(ctx context.Context, txid chainhash.Hash, fields ...Field) (*Meta, error) {
	items := []*UnresolvedMetaData{{TxID: txid}}
	if err := db.BatchDecorate(ctx, items, fields...); err != nil {
		return nil, err
	}
	return items[0].Meta, items[0].Err
}

// BatchDecorate implements Store: one engine read for every master, one for
// every child record of the paginated ones.
func (db *DB) BatchDecorate(ctx context.Context, items []*UnresolvedMetaData, fields ...Field) error {
	want := fieldSet(fields)
	keys := make([]engine.Key, len(items))
	for i, it := range items {
		keys[i] = engine.Key(record.MasterKey(it.TxID))
	}
	masters, err := db.readRecords(ctx, keys)
	if err != nil {
		return err
	}
	var childKeys []engine.Key
	for i, m := range masters {
		if m.err != nil {
			items[i].Err = m.err
			if errors.Is(m.err, errMissing) {
				items[i].Err = notFound(items[i].TxID)
			}
			continue
		}
		if want[FieldOutputs] {
			for c := uint32(1); c <= m.rec.TotalExtraRecs; c++ {
				childKeys = append(childKeys, engine.Key(record.RecordKey(items[i].TxID, c)))
			}
		}
	}
	children, err := db.readRecords(ctx, childKeys)
	if err != nil {
		return err
	}
	next := 0
	for i, m := range masters {
		if m.err != nil {
			continue
		}
		recs := []*record.Record{m.rec}
		if want[FieldOutputs] {
			for c := uint32(1); c <= m.rec.TotalExtraRecs; c++ {
				child := children[next]
				next++
				if child.err != nil {
					items[i].Err = storageErr("reading child record of "+items[i].TxID.String(), child.err)
					break
				}
				recs = append(recs, child.rec)
			}
		}
		if items[i].Err != nil {
			continue
		}
		var tx *chain.Tx
		if want[FieldTx] {
			if tx, err = db.txOf(ctx, m.rec); err != nil {
				items[i].Err = err
				continue
			}
		}
		items[i].Meta = metaFromRecords(recs, tx)
	}
	return nil
}

func fieldSet(fields []Field) map[Field]bool {
	set := map[Field]bool{}
	if len(fields) == 0 {
		fields = []Field{FieldTx, FieldOutputs}
	}
	for _, f := range fields {
		set[f] = true
	}
	return set
}

// readResult is one decoded record or why it could not be read.
type readResult struct {
	rec *record.Record
	err error
}

var errMissing = errors.New("record missing")

func (db *DB) readRecords(ctx context.Context, keys []engine.Key) ([]readResult, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	values, err := db.eng.Get(ctx, keys)
	if err != nil {
		return nil, storageErr("reading records", err)
	}
	out := make([]readResult, len(keys))
	for i, v := range values {
		if v == nil {
			out[i].err = errMissing
			continue
		}
		out[i].rec, out[i].err = record.Decode(v)
	}
	return out, nil
}

// txOf returns the transaction of a master record, from the record or from
// the blob store; of a transaction known by its outputs only, a transaction
// of those outputs (see outputsOnlyTx).
func (db *DB) txOf(ctx context.Context, master *record.Record) (*chain.Tx, error) {
	if master.OutputsOnly {
		return outputsOnlyTx(master.TxID, master.Tx)
	}
	if master.External {
		tx, err := db.loadExternalTx(ctx, master.TxID)
		if err == nil {
			db.txCache.offer(tx, activeOutputs(master))
		}
		return tx, err
	}
	tx, err := chain.ParseTx(master.Tx)
	if err != nil {
		return nil, model.NewError(model.CodeMalformed, master.TxID, 0, "stored transaction bytes do not parse: %v", err)
	}
	return tx, nil
}

// metaFromRecords combines a transaction's records (master first, children
// in index order) into its Meta.
func metaFromRecords(recs []*record.Record, tx *chain.Tx) *Meta {
	m := recs[0]
	meta := &Meta{
		TxID:           m.TxID,
		Tx:             tx,
		Fee:            m.Fee,
		SizeInBytes:    m.SizeInBytes,
		TxInpoints:     m.TxInpoints,
		LockTime:       m.LockTime,
		BlockIDs:       m.BlockIDs,
		BlockHeights:   m.BlockHeights,
		SubtreeIdxs:    m.SubtreeIdxs,
		IsCoinbase:     m.IsCoinbase,
		Locked:         m.Locked,
		Creating:       m.Creating,
		Conflicting:    m.Conflicting,
		External:       m.External,
		OutputsOnly:    m.OutputsOnly,
		UnminedSince:   m.UnminedSince,
		CreatedAt:      m.CreatedAt,
		PreserveUntil:  m.PreserveUntil,
		DeleteAtHeight: m.DeleteAtHeight,
		SpendingHeight: m.SpendingHeight,
		Records:        int(m.TotalExtraRecs) + 1,

		ConflictingChildren: m.ConflictingChildren,
	}
	outputs := 0
	for _, r := range recs {
		outputs += len(r.Utxos)
	}
	meta.Outputs = make([]OutputState, outputs)
	next := 0
	for _, r := range recs {
		meta.Frozen = meta.Frozen || r.Frozen
		meta.Creating = meta.Creating || r.Creating
		for offset, e := range r.Utxos {
			st := &meta.Outputs[next]
			next++
			if !e.Stored() {
				continue
			}
			st.Stored, st.UTXOHash = true, e.Hash()
			if r.UtxoSpendableIn != nil {
				st.SpendableIn = r.UtxoSpendableIn[uint32(offset)]
			}
			if e.IsUnspent() {
				continue // neither frozen nor spent
			}
			st.Frozen = e.IsFrozen()
			if data, ok := e.SpendingData(); ok {
				st.SpendingData = &data
			}
		}
	}
	return meta
}

// PreviousOutputsDecorate implements Store: it reads each parent once.
func (db *DB) PreviousOutputsDecorate(ctx context.Context, tx *chain.Tx) ([]*wire.TxOut, error) {
	if tx.IsCoinbase() {
		return nil, nil
	}
	parents := map[chainhash.Hash]*chain.Tx{}
	var items []*UnresolvedMetaData
	for _, in := range tx.Msg.TxIn {
		h := in.PreviousOutPoint.Hash
		if _, seen := parents[h]; !seen {
			parents[h] = nil
			items = append(items, &UnresolvedMetaData{TxID: h})
		}
	}
	if err := db.BatchDecorate(ctx, items, FieldTx); err != nil {
		return nil, err
	}
	for _, it := range items {
		if it.Err != nil {
			return nil, it.Err
		}
		parents[it.TxID] = it.Meta.Tx
	}
	outs := make([]*wire.TxOut, len(tx.Msg.TxIn))
	for vin, in := range tx.Msg.TxIn {
		parent := parents[in.PreviousOutPoint.Hash]
		if int(in.PreviousOutPoint.Index) >= len(parent.Msg.TxOut) || parent.Msg.TxOut[in.PreviousOutPoint.Index] == nil {
			return nil, model.NewError(model.CodeUtxoNotFound, parent.ID, in.PreviousOutPoint.Index, "parent has no such output")
		}
		outs[vin] = parent.Msg.TxOut[in.PreviousOutPoint.Index]
	}
	return outs, nil
}

// Delete implements Store: every record, the lock record and the blobs. A
// missing transaction is not an error, as in both reference stores. A
// transaction mined on the longest chain goes among its parents' deleted
// children, as Prune records it: its spends are the chain's, and a block
// spending those outputs again is refused, not taken for one freeing spends
// of a transaction never created. The blocks whose set statistics are
// pending are folded into the chain state first, durably: the worker reads
// a pending block's transactions, and the outputs they spent, back from
// the store, and would fail on the deleted one for good. Delete waits for a
// block being connected or disconnected.
func (db *DB) Delete(ctx context.Context, txid chainhash.Hash) error {
	db.chainMu.Lock()
	defer db.chainMu.Unlock()
	return db.deleteTx(ctx, txid, true)
}

// deleteTx deletes txid's records and blobs; with chainSpends, a
// transaction mined on the longest chain is recorded among its parents'
// deleted children first, once the pending set statistics are folded
// (commitStats: the caller holds chainMu). A failed block's own
// transactions, created mined in it, are deleted without: the block's
// spends are undone.
func (db *DB) deleteTx(ctx context.Context, txid chainhash.Hash, chainSpends bool) error {
	master, err := db.readRecord(ctx, txid, 0)
	if errors.Is(err, model.ErrTxNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if chainSpends && master.MinedOnLongestChain() {
		// Only a transaction of the chain can be one of a pending block's,
		// or have an output one spent.
		if err := db.commitStats(ctx); err != nil {
			return err
		}
		// Before the records go: a crash between leaves a transaction
		// recorded as deleted that a second Delete removes.
		if err := db.applyAll(ctx, db.deletedChildOps(master.TxInpoints, txid)); err != nil {
			return err
		}
	}
	keys := []engine.Key{engine.Key(record.MasterKey(txid)), engine.Key(record.LockKey(txid))}
	for i := uint32(1); i <= master.TotalExtraRecs; i++ {
		keys = append(keys, engine.Key(record.RecordKey(txid, i)))
	}
	// Children and blob before the master: a crash midway leaves a master
	// that a second Delete (or the pruner) finishes.
	if err := db.eng.Delete(ctx, keys[1:]); err != nil {
		return storageErr("deleting "+txid.String(), err)
	}
	if master.External {
		if err := db.deleteBlobs(ctx, txid); err != nil {
			return storageErr("deleting the blob of "+txid.String(), err)
		}
	}
	if err := db.eng.Delete(ctx, keys[:1]); err != nil {
		return storageErr("deleting "+txid.String(), err)
	}
	return nil
}
