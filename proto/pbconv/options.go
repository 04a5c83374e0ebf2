package pbconv

import (
	"github.com/utxostore/utxostore/chain"
	pb "github.com/utxostore/utxostore/proto/utxostorepb"
	"github.com/utxostore/utxostore/utxo"
)

// CreateRequest encodes a Create call: the transaction, its height and the
// options opts set.
func CreateRequest(tx *chain.Tx, height uint32, opts ...utxo.CreateOption) *pb.CreateRequest {
	o := utxo.NewCreateOptions(opts...)
	r := &pb.CreateRequest{Tx: tx.Raw, BlockHeight: height, Coinbase: o.Coinbase, Frozen: o.Frozen,
		Conflicting: o.Conflicting, Locked: o.Locked, Fee: o.Fee}
	for _, m := range o.MinedBlocks {
		r.MinedBlocks = append(r.MinedBlocks, MinedToPB(m))
	}
	return r
}

// CreateOptionsFromPB decodes a Create call's options.
func CreateOptionsFromPB(r *pb.CreateRequest) utxo.CreateOptions {
	o := utxo.CreateOptions{Coinbase: r.Coinbase, Frozen: r.Frozen, Conflicting: r.Conflicting, Locked: r.Locked, Fee: r.Fee}
	for _, m := range r.MinedBlocks {
		o.MinedBlocks = append(o.MinedBlocks, MinedFromPB(m))
	}
	return o
}

// SpendRequest encodes a Spend call: the spending transaction and the
// options opts set.
func SpendRequest(tx *chain.Tx, opts ...utxo.SpendOption) *pb.SpendRequest {
	o := utxo.NewSpendOptions(opts...)
	return &pb.SpendRequest{Tx: tx.Raw, BlockHeight: o.BlockHeight, IgnoreConflicting: o.IgnoreConflicting,
		IgnoreLocked: o.IgnoreLocked, PreviousOutputs: TxOutsToPB(o.PreviousOutputs)}
}

// SpendOptionsFromPB decodes a Spend call's options.
func SpendOptionsFromPB(r *pb.SpendRequest) utxo.SpendOptions {
	o := utxo.SpendOptions{BlockHeight: r.BlockHeight, IgnoreConflicting: r.IgnoreConflicting, IgnoreLocked: r.IgnoreLocked}
	if len(r.PreviousOutputs) > 0 {
		o.PreviousOutputs = TxOutsFromPB(r.PreviousOutputs)
	}
	return o
}
