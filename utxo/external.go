package utxo

import (
	"context"
	"errors"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/utxostore/utxostore/blob"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo/model"
	"github.com/utxostore/utxostore/utxo/record"
)

// putBlob writes an external transaction's bytes. A blob already there from
// an interrupted attempt is the same transaction (the name is its txid), so
// it is kept.
func (db *DB) putBlob(ctx context.Context, tx *chain.Tx) error {
	if db.opts.Blobs == nil {
		return model.NewError(model.CodeStorageError, tx.ID, 0,
			"transaction of %d bytes and %d outputs must be stored externally, but the store has no blob store configured", len(tx.Raw), len(tx.Msg.TxOut))
	}
	err := db.opts.Blobs.Put(ctx, tx.ID, blob.FileTypeTx, tx.Raw)
	if err != nil && !errors.Is(err, blob.ErrExists) {
		return model.NewError(model.CodeStorageError, tx.ID, 0, "writing the transaction to the external store: %v", err)
	}
	return nil
}

// loadExternalTx reads an external transaction: the .tx file first, then
// the .outputs file (which carries only the outputs).
func (db *DB) loadExternalTx(ctx context.Context, txid chainhash.Hash) (*chain.Tx, error) {
	if cached := db.txCache.get(txid); cached != nil {
		return cached, nil
	}
	if db.opts.Blobs == nil {
		return nil, model.NewError(model.CodeStorageError, txid, 0, "transaction is stored externally, but the store has no blob store configured")
	}
	raw, err := db.opts.Blobs.Get(ctx, txid, blob.FileTypeTx)
	if err == nil {
		tx, err := chain.ParseTx(raw)
		if err != nil {
			return nil, model.NewError(model.CodeStorageError, txid, 0, "external .tx file is damaged: %v", err)
		}
		return tx, nil
	}
	if !errors.Is(err, blob.ErrNotFound) {
		return nil, model.NewError(model.CodeStorageError, txid, 0, "reading the external transaction: %v", err)
	}
	raw, err = db.opts.Blobs.Get(ctx, txid, blob.FileTypeOutputs)
	if err != nil {
		return nil, model.NewError(model.CodeStorageError, txid, 0, "external transaction is missing from the blob store (.tx and .outputs): %v", err)
	}
	return outputsOnlyTx(txid, raw)
}

// setBlobDAH passes a delete-at-height to the external blob (the .tx file,
// else the .outputs file). Failure leaves the blob until the next signal or
// an explicit delete; it never loses data, so it is not an error of the
// operation that signalled it.
func (db *DB) setBlobDAH(ctx context.Context, txid chainhash.Hash, dah uint32) {
	for _, ft := range []blob.FileType{blob.FileTypeTx, blob.FileTypeOutputs} {
		if err := db.opts.Blobs.SetDAH(ctx, txid, ft, dah); err == nil || !errors.Is(err, blob.ErrNotFound) {
			return
		}
	}
}

// deleteBlobs removes both kinds of external file of txid.
func (db *DB) deleteBlobs(ctx context.Context, txid chainhash.Hash) error {
	db.txCache.drop(txid)
	if db.opts.Blobs == nil {
		return nil
	}
	return errors.Join(
		db.opts.Blobs.Delete(ctx, txid, blob.FileTypeTx),
		db.opts.Blobs.Delete(ctx, txid, blob.FileTypeOutputs),
	)
}

// activeOutputs is a lower bound of a transaction's unspent outputs, from its
// master record alone: the master's own, plus one for each child record that
// is not fully spent.
func activeOutputs(master *record.Record) int {
	return int(master.RecordUtxos-master.SpentUtxos) + int(master.TotalExtraRecs-master.SpentExtraRecs)
}

// txCache keeps the last txCacheLimit external transactions read that
// still have two or more active outputs, the reference's rule: a
// transaction with one output left is about to be spent for the last time
// and would only waste the cache.
type txCache struct {
	txs *lru.Cache[chainhash.Hash, *chain.Tx]
}

const txCacheLimit = 256

func newTxCache() txCache {
	txs, err := lru.New[chainhash.Hash, *chain.Tx](txCacheLimit)
	if err != nil {
		panic(err) // only for a size <= 0
	}
	return txCache{txs}
}

// drop forgets txid (its transaction was deleted).
func (c *txCache) drop(txid chainhash.Hash) { c.txs.Remove(txid) }

func (c *txCache) get(txid chainhash.Hash) *chain.Tx {
	tx, _ := c.txs.Get(txid)
	return tx
}

// offer caches tx if it has at least two active outputs, and drops it
// otherwise.
func (c *txCache) offer(tx *chain.Tx, activeOutputs int) {
	if activeOutputs < 2 {
		c.txs.Remove(tx.ID)
		return
	}
	c.txs.Add(tx.ID, tx)
}

// outputsOnlyTx rebuilds a transaction from a UTXOWrapper (a .outputs blob,
// or the outputs of an OutputsOnly record): outputs only, at their indexes
// (missing ones empty), no inputs. Enough for everything the store reads
// such a transaction for: amounts and scripts.
func outputsOnlyTx(txid chainhash.Hash, raw []byte) (*chain.Tx, error) {
	w, err := record.DecodeUTXOWrapper(raw)
	if err != nil {
		return nil, model.NewError(model.CodeStorageError, txid, 0, "the stored outputs are damaged: %v", err)
	}
	msg := wire.NewMsgTx(wire.TxVersion)
	for _, u := range w.UTXOs {
		if u.Index > record.MaxWrapperIndex {
			return nil, model.NewError(model.CodeStorageError, txid, u.Index, "external .outputs file names output %d: damaged", u.Index)
		}
		for uint32(len(msg.TxOut)) <= u.Index {
			msg.TxOut = append(msg.TxOut, &wire.TxOut{})
		}
		msg.TxOut[u.Index] = &wire.TxOut{Value: int64(u.Value), PkScript: u.Script}
	}
	return &chain.Tx{Msg: msg, ID: txid}, nil
}
