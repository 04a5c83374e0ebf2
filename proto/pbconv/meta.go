package pbconv

import (
	"fmt"

	pb "github.com/utxostore/utxostore/proto/utxostorepb"
	"github.com/utxostore/utxostore/utxo"
)

// MetaToPB encodes a transaction's metadata.
func MetaToPB(m *utxo.Meta) *pb.Meta {
	if m == nil {
		return nil
	}
	out := &pb.Meta{
		Txid: m.TxID[:], Fee: m.Fee, SizeInBytes: m.SizeInBytes, LockTime: m.LockTime,
		BlockIds: m.BlockIDs, BlockHeights: m.BlockHeights,
		IsCoinbase: m.IsCoinbase, Locked: m.Locked, Creating: m.Creating, Conflicting: m.Conflicting,
		Frozen: m.Frozen, External: m.External, ConflictingChildren: HashBytes(m.ConflictingChildren),
		UnminedSince: m.UnminedSince, CreatedAt: m.CreatedAt, PreserveUntil: m.PreserveUntil,
		DeleteAtHeight: m.DeleteAtHeight, SpendingHeight: m.SpendingHeight, Records: int32(m.Records),
	}
	if m.Tx != nil {
		out.Tx = m.Tx.Raw
	}
	for _, s := range m.SubtreeIdxs {
		out.SubtreeIdxs = append(out.SubtreeIdxs, int32(s))
	}
	for i, parent := range m.TxInpoints.ParentTxHashes {
		out.Inpoints = append(out.Inpoints, &pb.ParentInpoints{ParentTxid: parent[:], Vouts: m.TxInpoints.Idxs[i]})
	}
	for _, o := range m.Outputs {
		out.Outputs = append(out.Outputs, &pb.OutputState{Stored: o.Stored, UtxoHash: o.UTXOHash[:],
			Spending: SpendingDataToPB(o.SpendingData), Frozen: o.Frozen, SpendableIn: o.SpendableIn})
	}
	return out
}

// MetaFromPB decodes a transaction's metadata.
func MetaFromPB(m *pb.Meta) (*utxo.Meta, error) {
	if m == nil {
		return nil, nil
	}
	txid, err := Hash(m.Txid, "meta txid")
	if err != nil {
		return nil, err
	}
	out := &utxo.Meta{
		TxID: txid, Fee: m.Fee, SizeInBytes: m.SizeInBytes, LockTime: m.LockTime,
		BlockIDs: m.BlockIds, BlockHeights: m.BlockHeights,
		IsCoinbase: m.IsCoinbase, Locked: m.Locked, Creating: m.Creating, Conflicting: m.Conflicting,
		Frozen: m.Frozen, External: m.External,
		UnminedSince: m.UnminedSince, CreatedAt: m.CreatedAt, PreserveUntil: m.PreserveUntil,
		DeleteAtHeight: m.DeleteAtHeight, SpendingHeight: m.SpendingHeight, Records: int(m.Records),
	}
	if len(m.Tx) > 0 {
		if out.Tx, err = Tx(m.Tx); err != nil {
			return nil, err
		}
	}
	if out.ConflictingChildren, err = Hashes(m.ConflictingChildren, "conflicting children"); err != nil {
		return nil, err
	}
	for _, s := range m.SubtreeIdxs {
		out.SubtreeIdxs = append(out.SubtreeIdxs, int(s))
	}
	for i, in := range m.Inpoints {
		parent, err := Hash(in.ParentTxid, fmt.Sprintf("inpoints[%d] parent txid", i))
		if err != nil {
			return nil, err
		}
		out.TxInpoints.ParentTxHashes = append(out.TxInpoints.ParentTxHashes, parent)
		out.TxInpoints.Idxs = append(out.TxInpoints.Idxs, in.Vouts)
	}
	for i, o := range m.Outputs {
		st := utxo.OutputState{Stored: o.Stored, Frozen: o.Frozen, SpendableIn: o.SpendableIn}
		if len(o.UtxoHash) > 0 {
			if st.UTXOHash, err = Hash(o.UtxoHash, fmt.Sprintf("outputs[%d] utxo hash", i)); err != nil {
				return nil, err
			}
		}
		if st.SpendingData, err = SpendingDataFromPB(o.Spending); err != nil {
			return nil, err
		}
		out.Outputs = append(out.Outputs, st)
	}
	return out, nil
}
