package server

import (
	"bytes"

	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/blockstore"
	"github.com/utxostore/utxostore/utxo"
)

// StoreBlock keeps blk's raw bytes in the block store (nil: off). A block
// the store holds already at that height is left as it is
// (blockstore.Store.Put); a block connected without its header (some gRPC
// clients send none) cannot be rebuilt byte for byte and is not kept.
func StoreBlock(blocks *blockstore.Store, blk utxo.Block) error {
	if blocks == nil || blk.Header == nil {
		return nil
	}
	return blocks.Put(blk.Height, blk.Hash, RawBlock(blk))
}

// RawBlock is blk's serialization: the header, the transaction count and
// each transaction's bytes as they were read.
func RawBlock(blk utxo.Block) []byte {
	size := wire.MaxBlockHeaderPayload + wire.MaxVarIntPayload
	for _, tx := range blk.Txs {
		size += len(tx.Raw)
	}
	var buf bytes.Buffer
	buf.Grow(size)
	_ = blk.Header.Serialize(&buf) // a bytes.Buffer does not fail
	_ = wire.WriteVarInt(&buf, 0, uint64(len(blk.Txs)))
	for _, tx := range blk.Txs {
		buf.Write(tx.Raw)
	}
	return buf.Bytes()
}
