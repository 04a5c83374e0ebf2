package index

import "github.com/btcsuite/btcd/chaincfg/chainhash"

// BlockInfo is one value of the height column.
type BlockInfo struct {
	Height uint32 // from the key
	Hash   chainhash.Hash
	Time   uint32
	Txs    uint32
	Size   uint32
}

func packBlockInfo(bi *BlockInfo) []byte {
	b := make([]byte, 0, chainhash.HashSize+4+2*5)
	b = appendHash(b, &bi.Hash)
	b = append(b, packUint32(bi.Time)...)
	b = appendUvarint(b, uint64(bi.Txs))
	return appendUvarint(b, uint64(bi.Size))
}

func unpackBlockInfo(key, val []byte) (BlockInfo, error) {
	if len(key) != 4 {
		return BlockInfo{}, corrupt(cfHeight, key, "key of %d bytes, want 4", len(key))
	}
	d := decoder{buf: val}
	bi := BlockInfo{Height: (&decoder{buf: key}).uint32be()}
	bi.Hash = d.hash()
	bi.Time = d.uint32be()
	bi.Txs = d.uint32v("nr_txs")
	bi.Size = d.uint32v("size")
	return bi, d.done(cfHeight, key)
}
