// Package pbconv converts between the store's Go types (package utxo) and
// their protobuf messages, in both directions, so that the server and the
// client agree on one mapping.
package pbconv

import (
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	pb "github.com/utxostore/utxostore/proto/utxostorepb"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// Hash decodes a 32-byte hash in internal byte order; what names the field
// in the error.
func Hash(b []byte, what string) (chainhash.Hash, error) {
	var h chainhash.Hash
	if len(b) != chainhash.HashSize {
		return h, fmt.Errorf("%s: want %d bytes, got %d", what, chainhash.HashSize, len(b))
	}
	copy(h[:], b)
	return h, nil
}

// Hashes decodes a list of hashes.
func Hashes(bs [][]byte, what string) ([]chainhash.Hash, error) {
	out := make([]chainhash.Hash, len(bs))
	for i, b := range bs {
		h, err := Hash(b, fmt.Sprintf("%s[%d]", what, i))
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}

// HashBytes encodes hashes.
func HashBytes(hs []chainhash.Hash) [][]byte {
	out := make([][]byte, len(hs))
	for i := range hs {
		out[i] = hs[i][:]
	}
	return out
}

// OptionalHash encodes a possibly nil hash as possibly empty bytes.
func OptionalHash(h *chainhash.Hash) []byte {
	if h == nil {
		return nil
	}
	return h[:]
}

func optionalHashFrom(b []byte, what string) (*chainhash.Hash, error) {
	if len(b) == 0 {
		return nil, nil
	}
	h, err := Hash(b, what)
	return &h, err
}

// Tx parses a serialised transaction.
func Tx(raw []byte) (*chain.Tx, error) {
	if len(raw) == 0 {
		return nil, errors.New("transaction: no bytes")
	}
	tx, err := chain.ParseTx(raw)
	if err != nil {
		return nil, fmt.Errorf("transaction: %w", err)
	}
	return tx, nil
}

// SpendingDataToPB encodes spending data.
func SpendingDataToPB(s *model.SpendingData) *pb.SpendingData {
	if s == nil {
		return nil
	}
	return &pb.SpendingData{Txid: s.TxID[:], Vin: s.Vin}
}

// SpendingDataFromPB decodes spending data.
func SpendingDataFromPB(s *pb.SpendingData) (*model.SpendingData, error) {
	if s == nil {
		return nil, nil
	}
	h, err := Hash(s.Txid, "spending txid")
	if err != nil {
		return nil, err
	}
	return &model.SpendingData{TxID: h, Vin: s.Vin}, nil
}

// MinedToPB encodes MinedBlockInfo.
func MinedToPB(m model.MinedBlockInfo) *pb.MinedBlockInfo {
	return &pb.MinedBlockInfo{BlockId: m.BlockID, BlockHeight: m.BlockHeight, SubtreeIdx: int32(m.SubtreeIdx),
		OnLongestChain: m.OnLongestChain, UnsetMined: m.UnsetMined}
}

// MinedFromPB decodes MinedBlockInfo; nil is the zero value.
func MinedFromPB(m *pb.MinedBlockInfo) model.MinedBlockInfo {
	if m == nil {
		return model.MinedBlockInfo{}
	}
	return model.MinedBlockInfo{BlockID: m.BlockId, BlockHeight: m.BlockHeight, SubtreeIdx: int(m.SubtreeIdx),
		OnLongestChain: m.OnLongestChain, UnsetMined: m.UnsetMined}
}

// FieldsToPB encodes Get fields.
func FieldsToPB(fs []utxo.Field) []pb.Field {
	out := make([]pb.Field, len(fs))
	for i, f := range fs {
		out[i] = pb.Field(f)
	}
	return out
}

// FieldsFromPB decodes Get fields, refusing unknown ones.
func FieldsFromPB(fs []pb.Field) ([]utxo.Field, error) {
	out := make([]utxo.Field, len(fs))
	for i, f := range fs {
		if f != pb.Field_FIELD_TX && f != pb.Field_FIELD_OUTPUTS {
			return nil, fmt.Errorf("fields[%d]: unknown field %d", i, f)
		}
		out[i] = utxo.Field(f)
	}
	return out, nil
}

// TxOutsToPB encodes outputs; nil entries stay empty messages.
func TxOutsToPB(outs []*wire.TxOut) []*pb.TxOut {
	res := make([]*pb.TxOut, len(outs))
	for i, o := range outs {
		if o == nil {
			res[i] = &pb.TxOut{}
			continue
		}
		res[i] = &pb.TxOut{Value: o.Value, Script: o.PkScript}
	}
	return res
}

// TxOutsFromPB decodes outputs.
func TxOutsFromPB(outs []*pb.TxOut) []*wire.TxOut {
	if len(outs) == 0 {
		return nil
	}
	res := make([]*wire.TxOut, len(outs))
	for i, o := range outs {
		res[i] = wire.NewTxOut(o.GetValue(), o.GetScript())
	}
	return res
}
