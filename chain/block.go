package chain

import (
	"bytes"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
)

// HeaderSize is the size of a serialised block header.
const HeaderSize = wire.MaxBlockHeaderPayload

// BlockInfo is what a block says about itself. The height is not in the
// block; the caller knows it from the chain it is following.
type BlockInfo struct {
	Header wire.BlockHeader
	// Hash is the double SHA-256 of the 80 header bytes as read.
	Hash chainhash.Hash
	// TxCount is the transaction count the block declares.
	TxCount uint64
	// Size is the block's serialised size in bytes. A BlockReader knows it
	// only once every transaction has been read.
	Size int64
}

// PrevHash is the hash of the parent block.
func (i *BlockInfo) PrevHash() chainhash.Hash { return i.Header.PrevBlock }

// Time is the block's header timestamp.
func (i *BlockInfo) Time() time.Time { return i.Header.Timestamp }

// Block is a whole block held in memory. Use it when the block fits
// comfortably in memory (tests, small chains); use [BlockReader] otherwise.
type Block struct {
	BlockInfo
	// Raw is the block's bytes; every Tx.Raw aliases it.
	Raw []byte
	Txs []*Tx
}

// decodeHeader decodes the 80 header bytes and hashes them as they are,
// rather than re-serialising, so the hash is of exactly what was read.
func decodeHeader(b []byte) (wire.BlockHeader, chainhash.Hash, error) {
	var h wire.BlockHeader
	if len(b) < HeaderSize {
		return h, chainhash.Hash{}, fieldErr(ErrTruncated, 0, "block header")
	}
	if err := h.Deserialize(bytes.NewReader(b[:HeaderSize])); err != nil {
		return h, chainhash.Hash{}, fieldErr(err, 0, "block header")
	}
	return h, chainhash.DoubleHashH(b[:HeaderSize]), nil
}

// ParseBlock parses a whole serialised block (header, CompactSize count,
// transactions). raw must hold exactly one block. Transactions alias raw.
func ParseBlock(raw []byte) (*Block, error) {
	header, hash, err := decodeHeader(raw)
	if err != nil {
		return nil, err
	}
	c := cursor{buf: raw, off: HeaderSize}
	count, err := c.count(minTxSize)
	if err != nil {
		return nil, fieldErr(err, HeaderSize, "transaction count")
	}
	blk := &Block{
		BlockInfo: BlockInfo{Header: header, Hash: hash, TxCount: uint64(count), Size: int64(len(raw))},
		Raw:       raw,
		Txs:       make([]*Tx, count),
	}
	for i := range blk.Txs {
		start := c.off
		tx, err := parseTxPrefix(raw[start:])
		if err != nil {
			return nil, inTx(err, uint64(i), int64(start))
		}
		blk.Txs[i] = tx
		c.off += len(tx.Raw)
	}
	if c.remaining() != 0 {
		return nil, fieldErr(ErrTrailingBytes, c.off, "end of block")
	}
	return blk, nil
}

// Serialize re-encodes the block from its parsed header and messages (not
// from Raw), so a byte-exact match with Raw proves the parse lost nothing.
func (b *Block) Serialize() []byte {
	size := HeaderSize + wire.VarIntSerializeSize(uint64(len(b.Txs)))
	for _, tx := range b.Txs {
		size += tx.Msg.SerializeSize()
	}
	var buf bytes.Buffer
	buf.Grow(size)
	_ = b.Header.Serialize(&buf) // bytes.Buffer writes cannot fail
	_ = wire.WriteVarInt(&buf, 0, uint64(len(b.Txs)))
	for _, tx := range b.Txs {
		_ = tx.Msg.Serialize(&buf)
	}
	return buf.Bytes()
}
