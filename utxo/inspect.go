package utxo

import (
	"context"
	"errors"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/blob"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/record"
)

// Inspection is everything the store holds about one transaction, record by
// record, for an operator looking at a stuck or surprising transaction.
type Inspection struct {
	TxID    chainhash.Hash     `json:"txid"`
	Records []RecordInspection `json:"records"`
	Lock    *LockInspection    `json:"lock,omitempty"`
	Blobs   []BlobInspection   `json:"blobs,omitempty"`
	// Missing lists record indexes the master announces but the engine
	// does not hold (an interrupted create or delete).
	Missing []uint32 `json:"missingRecords,omitempty"`
	// Errors holds, by record index, why a record could not be decoded.
	Errors map[uint32]string `json:"recordErrors,omitempty"`
}

// RecordInspection is one stored record.
type RecordInspection struct {
	Index          uint32   `json:"index"`
	Key            string   `json:"key"`
	Outputs        int      `json:"outputs"`
	RecordUtxos    uint32   `json:"recordUtxos"`
	SpentUtxos     uint32   `json:"spentUtxos"`
	TotalUtxos     uint32   `json:"totalUtxos,omitempty"`
	TotalExtraRecs uint32   `json:"totalExtraRecs,omitempty"`
	SpentExtraRecs uint32   `json:"spentExtraRecs,omitempty"`
	Flags          []string `json:"flags,omitempty"`
	UnminedSince   uint32   `json:"unminedSince,omitempty"`
	DeleteAtHeight uint32   `json:"deleteAtHeight,omitempty"`
	PreserveUntil  uint32   `json:"preserveUntil,omitempty"`
	SpendingHeight uint32   `json:"spendingHeight,omitempty"`
	BlockHeights   []uint32 `json:"blockHeights,omitempty"`
	BlockIDs       []uint32 `json:"blockIDs,omitempty"`
	TxBytes        int      `json:"txBytes,omitempty"`
}

// LockInspection is a lock record still held: who took it, when, and how
// many records its create writes.
type LockInspection struct {
	CreatedAt    int64  `json:"created_at"` // unix seconds
	LockType     string `json:"lock_type"`
	ProcessID    int    `json:"process_id"`
	Hostname     string `json:"hostname"`
	ExpectedRecs int    `json:"expected_recs"`
}

// BlobInspection is one external file.
type BlobInspection struct {
	Type  blob.FileType `json:"type"`
	Bytes int           `json:"bytes"`
}

// Inspect reads every record of txid (master, children up to what the master
// announces, the lock record) and its external blobs, reporting damaged or
// missing records instead of failing on them.
func (db *DB) Inspect(ctx context.Context, txid chainhash.Hash) (*Inspection, error) {
	ins := &Inspection{TxID: txid, Errors: map[uint32]string{}}
	keys := []engine.Key{engine.Key(record.MasterKey(txid)), engine.Key(record.LockKey(txid))}
	values, err := db.eng.Get(ctx, keys)
	if err != nil {
		return nil, storageErr("reading "+txid.String(), err)
	}
	if values[1] != nil {
		if l, err := decodeLockRecord(values[1]); err == nil {
			ins.Lock = &LockInspection{CreatedAt: l.CreatedAt, LockType: l.LockType, ProcessID: l.ProcessID,
				Hostname: l.Hostname, ExpectedRecs: l.ExpectedRecs}
		} else {
			ins.Errors[record.LockRecordIndex] = err.Error()
		}
	}
	if values[0] == nil {
		if ins.Lock == nil {
			return nil, notFound(txid)
		}
		ins.Missing = append(ins.Missing, 0)
		return ins, nil
	}
	master, err := record.Decode(values[0])
	if err != nil {
		ins.Errors[0] = err.Error()
		return ins, nil
	}
	ins.Records = append(ins.Records, inspectRecord(master))
	var childKeys []engine.Key
	for i := uint32(1); i <= master.TotalExtraRecs; i++ {
		childKeys = append(childKeys, engine.Key(record.RecordKey(txid, i)))
	}
	children, err := db.readRecords(ctx, childKeys)
	if err != nil {
		return nil, err
	}
	for i, c := range children {
		index := uint32(i + 1)
		switch {
		case errors.Is(c.err, errMissing):
			ins.Missing = append(ins.Missing, index)
		case c.err != nil:
			ins.Errors[index] = c.err.Error()
		default:
			ins.Records = append(ins.Records, inspectRecord(c.rec))
		}
	}
	if db.opts.Blobs != nil {
		for _, ft := range []blob.FileType{blob.FileTypeTx, blob.FileTypeOutputs} {
			if data, err := db.opts.Blobs.Get(ctx, txid, ft); err == nil {
				ins.Blobs = append(ins.Blobs, BlobInspection{Type: ft, Bytes: len(data)})
			}
		}
	}
	if len(ins.Errors) == 0 {
		ins.Errors = nil
	}
	return ins, nil
}

func inspectRecord(r *record.Record) RecordInspection {
	ri := RecordInspection{
		Index: r.Index, Key: chainhash.Hash(record.RecordKey(r.TxID, r.Index)).String(),
		Outputs: len(r.Utxos), RecordUtxos: r.RecordUtxos, SpentUtxos: r.SpentUtxos,
		TotalUtxos: r.TotalUtxos, TotalExtraRecs: r.TotalExtraRecs, SpentExtraRecs: r.SpentExtraRecs,
		UnminedSince: r.UnminedSince, DeleteAtHeight: r.DeleteAtHeight, PreserveUntil: r.PreserveUntil,
		SpendingHeight: r.SpendingHeight, BlockHeights: r.BlockHeights, BlockIDs: r.BlockIDs, TxBytes: len(r.Tx),
	}
	for _, f := range []struct {
		on   bool
		name string
	}{
		{r.Creating, "creating"}, {r.Locked, "locked"}, {r.Conflicting, "conflicting"},
		{r.Frozen, "frozen"}, {r.External, "external"}, {r.IsCoinbase, "coinbase"},
	} {
		if f.on {
			ri.Flags = append(ri.Flags, f.name)
		}
	}
	return ri
}
