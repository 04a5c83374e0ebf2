package utxo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// The chain state is read and written for every block, so it is kept in a
// small binary form rather than JSON (whose encoding of the set's
// statistics, 785 bytes, cost more than the rest of a small block):
//
//	chain state:  Height u32 | flags u8 (1: HasTip) | TipHeight u32 | TipHash [32]
//	              | NextBlockID u32 | Blocks u64 | Txs u64 | First u32
//	              | TipBlock (uvarint length, a connected block; 0: none)
//	              | Stats (uvarint length, coinstats.Stats' binary form) | StatsBehind u32
//	block:        Hash [32] | PrevHash [32] | ID u32 | Txs uvarint
//	              | Conflicting (uvarint count, [32] each) | Size varint | Time varint
//	              | Version i32 | flags u8 (1: MerkleRoot) [| MerkleRoot [32]] | Bits u32 | Nonce u32
//
// Integers are big-endian; varints are encoding/binary's.

// errDamaged is the cause of every decoding failure.
var errDamaged = errors.New("damaged")

func (cs *chainState) marshal() []byte {
	b := make([]byte, 0, 128+len(cs.Stats)+blockSizeHint(cs.TipBlock))
	b = binary.BigEndian.AppendUint32(b, cs.Height)
	b = append(b, flagOf(cs.HasTip))
	b = binary.BigEndian.AppendUint32(b, cs.TipHeight)
	b = append(b, cs.TipHash[:]...)
	b = binary.BigEndian.AppendUint32(b, cs.NextBlockID)
	b = binary.BigEndian.AppendUint64(b, cs.Blocks)
	b = binary.BigEndian.AppendUint64(b, cs.Txs)
	b = binary.BigEndian.AppendUint32(b, cs.First)
	var tip []byte
	if cs.TipBlock != nil {
		tip = cs.TipBlock.marshal()
	}
	b = appendBytes(b, tip)
	b = appendBytes(b, cs.Stats)
	return binary.BigEndian.AppendUint32(b, cs.StatsBehind)
}

func (cs *chainState) unmarshal(raw []byte) error {
	d := decoder{buf: raw}
	cs.Height = d.uint32()
	cs.HasTip = d.byte() == 1
	cs.TipHeight = d.uint32()
	cs.TipHash = d.hash()
	cs.NextBlockID = d.uint32()
	cs.Blocks = d.uint64()
	cs.Txs = d.uint64()
	cs.First = d.uint32()
	cs.TipBlock = nil
	if tip := d.bytes(); len(tip) > 0 && d.err == nil {
		cs.TipBlock = &connectedBlock{}
		if err := cs.TipBlock.unmarshal(tip); err != nil {
			return err
		}
	}
	cs.Stats = bytes.Clone(d.bytes())
	cs.StatsBehind = d.uint32()
	return d.end()
}

func (b *connectedBlock) marshal() []byte {
	out := make([]byte, 0, blockSizeHint(b))
	out = append(out, b.Hash[:]...)
	out = append(out, b.PrevHash[:]...)
	out = binary.BigEndian.AppendUint32(out, b.ID)
	out = binary.AppendUvarint(out, uint64(b.Txs))
	out = binary.AppendUvarint(out, uint64(len(b.Conflicting)))
	for _, h := range b.Conflicting {
		out = append(out, h[:]...)
	}
	out = binary.AppendVarint(out, b.Size)
	out = binary.AppendVarint(out, b.Time)
	out = binary.BigEndian.AppendUint32(out, uint32(b.Version))
	out = append(out, flagOf(b.MerkleRoot != nil))
	if b.MerkleRoot != nil {
		out = append(out, b.MerkleRoot[:]...)
	}
	out = binary.BigEndian.AppendUint32(out, b.Bits)
	return binary.BigEndian.AppendUint32(out, b.Nonce)
}

func (b *connectedBlock) unmarshal(raw []byte) error {
	d := decoder{buf: raw}
	b.Hash = d.hash()
	b.PrevHash = d.hash()
	b.ID = d.uint32()
	b.Txs = int(d.uvarint())
	b.Conflicting = nil
	if n := d.uvarint(); n > 0 && d.err == nil {
		if n > uint64(len(raw))/chainhash.HashSize {
			return fmt.Errorf("%w: %d conflicting transactions in %d bytes", errDamaged, n, len(raw))
		}
		b.Conflicting = make([]chainhash.Hash, n)
		for i := range b.Conflicting {
			b.Conflicting[i] = d.hash()
		}
	}
	b.Size = d.varint()
	b.Time = d.varint()
	b.Version = int32(d.uint32())
	b.MerkleRoot = nil
	if d.byte() == 1 {
		root := d.hash()
		b.MerkleRoot = &root
	}
	b.Bits = d.uint32()
	b.Nonce = d.uint32()
	return d.end()
}

func blockSizeHint(b *connectedBlock) int {
	if b == nil {
		return 0
	}
	return 160 + len(b.Conflicting)*chainhash.HashSize
}

func flagOf(set bool) byte {
	if set {
		return 1
	}
	return 0
}

func appendBytes(b, v []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(v))), v...)
}

// decoder reads the binary forms; the first failure sticks.
type decoder struct {
	buf []byte
	off int
	err error
}

func (d *decoder) take(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.buf)-d.off) {
		d.err = fmt.Errorf("%w: %d bytes wanted at offset %d of %d", errDamaged, n, d.off, len(d.buf))
		return nil
	}
	v := d.buf[d.off : d.off+int(n)]
	d.off += int(n)
	return v
}

func (d *decoder) byte() byte {
	if v := d.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (d *decoder) uint32() uint32 {
	if v := d.take(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

func (d *decoder) uint64() uint64 {
	if v := d.take(8); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (d *decoder) hash() (h chainhash.Hash) {
	copy(h[:], d.take(chainhash.HashSize))
	return h
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf[d.off:])
	if n <= 0 {
		d.err = fmt.Errorf("%w: a bad varint at offset %d", errDamaged, d.off)
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.buf[d.off:])
	if n <= 0 {
		d.err = fmt.Errorf("%w: a bad varint at offset %d", errDamaged, d.off)
		return 0
	}
	d.off += n
	return v
}

// bytes reads a length-prefixed field, shared with the buffer.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	v := d.take(n)
	if n == 0 {
		return nil
	}
	return v
}

// end fails for trailing bytes, or returns the first failure.
func (d *decoder) end() error {
	if d.err == nil && d.off != len(d.buf) {
		d.err = fmt.Errorf("%w: %d trailing bytes", errDamaged, len(d.buf)-d.off)
	}
	return d.err
}
