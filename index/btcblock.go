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
	b := &Block{
		Height: height,
		Hash:   mb.BlockHash(),
		Time:   uint32(mb.Header.Timestamp.Unix()),
		Size:   uint32(mb.SerializeSize()),
		Txs:    make([]Tx, len(mb.Transactions)),
	}
	for i, mtx := range mb.Transactions {
		tx := &b.Txs[i]
		tx.ID = mtx.TxHash()
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
