package pbconv

import (
	"fmt"

	pb "github.com/utxostore/utxostore/proto/utxostorepb"
	"github.com/utxostore/utxostore/utxo"
)

// SpendToPB encodes one spend, its outcome included.
func SpendToPB(s *utxo.Spend) *pb.Spend {
	if s == nil {
		return nil
	}
	return &pb.Spend{Txid: s.TxID[:], Vout: s.Vout, UtxoHash: OptionalHash(s.UTXOHash),
		Spending: SpendingDataToPB(s.SpendingData), ConflictingTxid: OptionalHash(s.ConflictingTxID),
		Error: ErrorToPB(s.Err)}
}

// SpendsToPB encodes spends.
func SpendsToPB(ss []*utxo.Spend) []*pb.Spend {
	out := make([]*pb.Spend, len(ss))
	for i, s := range ss {
		out[i] = SpendToPB(s)
	}
	return out
}

// SpendFromPB decodes one spend.
func SpendFromPB(s *pb.Spend) (*utxo.Spend, error) {
	if s == nil {
		return nil, fmt.Errorf("spend: missing")
	}
	txid, err := Hash(s.Txid, "spend txid")
	if err != nil {
		return nil, err
	}
	out := &utxo.Spend{TxID: txid, Vout: s.Vout, Err: ErrorFromPB(s.Error)}
	if out.UTXOHash, err = optionalHashFrom(s.UtxoHash, "utxo hash"); err != nil {
		return nil, err
	}
	if out.ConflictingTxID, err = optionalHashFrom(s.ConflictingTxid, "conflicting txid"); err != nil {
		return nil, err
	}
	if out.SpendingData, err = SpendingDataFromPB(s.Spending); err != nil {
		return nil, err
	}
	return out, nil
}

// SpendsFromPB decodes spends.
func SpendsFromPB(ss []*pb.Spend) ([]*utxo.Spend, error) {
	out := make([]*utxo.Spend, len(ss))
	for i, s := range ss {
		sp, err := SpendFromPB(s)
		if err != nil {
			return nil, fmt.Errorf("spends[%d]: %w", i, err)
		}
		out[i] = sp
	}
	return out, nil
}

// statusNames inverts OutputStatus.String.
var statusNames = func() map[string]utxo.OutputStatus {
	m := map[string]utxo.OutputStatus{}
	for s := utxo.StatusNotFound; s <= utxo.StatusImmature; s++ {
		m[s.String()] = s
	}
	return m
}()

// SpendResponseToPB encodes GetSpend's answer.
func SpendResponseToPB(r *utxo.SpendResponse) *pb.GetSpendReply {
	if r == nil {
		return &pb.GetSpendReply{}
	}
	return &pb.GetSpendReply{Status: r.Status.String(), Spending: SpendingDataToPB(r.SpendingData),
		SpendableIn: r.SpendableIn, LockTime: r.LockTime}
}

// SpendResponseFromPB decodes GetSpend's answer.
func SpendResponseFromPB(r *pb.GetSpendReply) (*utxo.SpendResponse, error) {
	st, ok := statusNames[r.GetStatus()]
	if !ok {
		return nil, fmt.Errorf("unknown output status %q", r.GetStatus())
	}
	sd, err := SpendingDataFromPB(r.GetSpending())
	if err != nil {
		return nil, err
	}
	return &utxo.SpendResponse{Status: st, SpendingData: sd, SpendableIn: r.GetSpendableIn(), LockTime: r.GetLockTime()}, nil
}
