package index

import (
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
)

// FromWireBlock converts a btcd block into the index's Block. The wire
// format does not carry the height, so the caller gives it. Output values
// are taken as unsigned; btcd decodes them as int64 and consensus keeps
// them non-negative.
func FromWireBlock(mb *wire.MsgBlock, height uint32) *Block {
	ids := make([]chainhash.Hash, len(mb.Transactions))
	for i, mtx := range mb.Transactions {
		ids[i] = mtx.TxHash()
	}
	return FromWire(height, &mb.Header, int64(mb.SerializeSize()), mb.Transactions, ids)
}

// FromWire builds the index's Block from a block's parts, for callers that
// already hold the transaction ids (a streaming parser computes them as it
// reads) and the block's serialized size.
func FromWire(height uint32, header *wire.BlockHeader, size int64, txs []*wire.MsgTx, ids []chainhash.Hash) *Block {
	b := &Block{
		Height: height,
		Hash:   header.BlockHash(),
		Time:   uint32(header.Timestamp.Unix()),
		Size:   uint32(size),
		Txs:    make([]Tx, len(txs)),
	}
	for i, mtx := range txs {
		tx := &b.Txs[i]
		tx.ID = ids[i]
		coinbase := isCoinbase(mtx)
		tx.Inputs = make([]Outpoint, len(mtx.TxIn))
		for j, in := range mtx.TxIn {
			if coinbase {
				tx.Inputs[j] = Outpoint{Coinbase: true}
				continue
			}
			tx.Inputs[j] = Outpoint{TxID: in.PreviousOutPoint.Hash, Vout: in.PreviousOutPoint.Index}
		}
		tx.Outputs = make([]Output, len(mtx.TxOut))
		for j, out := range mtx.TxOut {
			tx.Outputs[j] = Output{Script: out.PkScript, Value: uint64(out.Value)}
		}
	}
	return b
}

// isCoinbase is btcd's blockchain.IsCoinBaseTx rule (one input spending
// the null outpoint), kept here to avoid importing the whole blockchain
// package for it.
func isCoinbase(tx *wire.MsgTx) bool {
	if len(tx.TxIn) != 1 {
		return false
	}
	prev := &tx.TxIn[0].PreviousOutPoint
	return prev.Index == wire.MaxPrevOutIndex && prev.Hash == (chainhash.Hash{})
}
