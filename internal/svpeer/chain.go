// Package svpeer runs a Bitcoin SV node's side of the P2P protocol on
// loopback for tests, built on Bitcoin SV's wire package
// (github.com/bsv-blockchain/go-wire): it answers the handshake as a
// Bitcoin SV node does (its user agent, NODE_BITCOIN_CASH, an association
// id after the relay flag, a protoconf after the verack), getheaders and
// getdata, serving a synthetic chain on Bitcoin SV regtest's parameters
// whose last block is as large as the test asks (megabytes to gigabytes),
// kept in a file and streamed from it. A block message is framed as
// go-wire frames it, or, where the test asks, in the extended header
// ("extmsg") a Bitcoin SV node writes for a message over 4 GB and reads
// for any (bitcoin-sv src/protocol.cpp; its test read_extmsg_msg), which
// go-wire v1.2.11 can neither write nor read; or replaced by a hostile
// message.
package svpeer

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
)

// Block is one block of a Chain, kept in a file as its raw bytes.
type Block struct {
	Hash   chainhash.Hash
	Header wire.BlockHeader
	Path   string
	Size   int64
	Txs    int
}

// Chain is a synthetic chain on Bitcoin SV regtest: the genesis block,
// Mature blocks of a coinbase each (so the first coinbase can be spent),
// then a large block.
type Chain struct {
	Blocks []*Block
	// Large is the large block's transaction with many outputs, paid from
	// the first coinbase.
	Large chainhash.Hash
}

// Mature is the number of coinbase-only blocks after genesis: block 1's
// coinbase is spendable in block Mature+1, the large block.
const Mature = 101

// Network is the network the chain is on, as a store names it.
const Network = "bsv-regtest"

var params = &chaincfg.RegressionNetParams

// Script is the pay-to-pubkey-hash script of the key hash of tag, which
// the chain's outputs pay.
func Script(tag byte) []byte {
	s := append([]byte{0x76, 0xa9, 20}, bytes.Repeat([]byte{tag}, 20)...)
	return append(s, 0x88, 0xac)
}

// Build writes a chain into dir whose large block holds about size bytes:
// a coinbase, a transaction spending block 1's coinbase into outputs
// outputs, then transactions spending those outputs one each, each with a
// zero-value OP_FALSE OP_RETURN output of about a megabyte of data, until
// the block reaches size. Blocks already in dir (an earlier call with the
// same arguments) are read back instead of written again.
func Build(t testing.TB, dir string, size int64, outputs int) *Chain {
	t.Helper()
	c := &Chain{}
	var genesis bytes.Buffer
	if err := params.GenesisBlock.Serialize(&genesis); err != nil {
		t.Fatal(err)
	}
	c.add(t, dir, 0, genesis.Bytes())
	var coinbase1 *wire.MsgTx
	for h := int32(1); h <= Mature; h++ {
		cb := coinbase(h, 1)
		if h == 1 {
			coinbase1 = cb
		}
		c.add(t, dir, h, serialize(t, block(c.tip().Hash, h, cb)))
	}
	big := largeTx(coinbase1, outputs)
	c.Large = big.TxHash()
	large := filepath.Join(dir, fmt.Sprintf("large-%d-%d.block", size, outputs))
	b, err := readBlock(large)
	if err != nil {
		b = writeLarge(t, large, c.tip().Hash, Mature+1, size, big)
	}
	c.Blocks = append(c.Blocks, b)
	return c
}

func (c *Chain) tip() *Block { return c.Blocks[len(c.Blocks)-1] }

// Tip is the chain's last block and its height.
func (c *Chain) Tip() (*Block, int32) { return c.tip(), int32(len(c.Blocks) - 1) }

// Files are the chain's block files, one raw block each, in height order:
// what `utxostore import` takes.
func (c *Chain) Files() []string {
	paths := make([]string, len(c.Blocks))
	for i, b := range c.Blocks {
		paths[i] = b.Path
	}
	return paths
}

// add writes a small block's file.
func (c *Chain) add(t testing.TB, dir string, height int32, raw []byte) {
	t.Helper()
	blk, err := chain.ParseBlock(raw)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%06d.block", height))
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	c.Blocks = append(c.Blocks, &Block{Hash: blk.Hash, Header: blk.Header, Path: path, Size: int64(len(raw)), Txs: len(blk.Txs)})
}

// readBlock reads the header and transaction count of a block file.
func readBlock(path string) (*Block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	br, err := chain.NewBlockReader(f)
	if err != nil {
		return nil, err
	}
	i := br.Info()
	return &Block{Hash: i.Hash, Header: i.Header, Path: path, Size: info.Size(), Txs: int(i.TxCount)}, nil
}

// coinbase pays 50 coins to Script(tag), its height in its script.
func coinbase(height int32, tag byte) *wire.MsgTx {
	tx := wire.NewMsgTx(1)
	tx.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: wire.MaxPrevOutIndex},
		SignatureScript: binary.LittleEndian.AppendUint32([]byte{0x04}, uint32(height)), Sequence: wire.MaxTxInSequenceNum})
	tx.AddTxOut(wire.NewTxOut(50e8, Script(tag)))
	return tx
}

// largeTx spends the coinbase into outputs outputs.
func largeTx(coinbase *wire.MsgTx, outputs int) *wire.MsgTx {
	tx := wire.NewMsgTx(1)
	tx.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Hash: coinbase.TxHash()}, SignatureScript: []byte{0x51}, Sequence: wire.MaxTxInSequenceNum})
	value := coinbase.TxOut[0].Value / int64(outputs+1)
	script := Script(2)
	for range outputs {
		tx.AddTxOut(&wire.TxOut{Value: value, PkScript: script})
	}
	return tx
}

// block is a block of txs on prev at height, its proof of work solved.
func block(prev chainhash.Hash, height int32, txs ...*wire.MsgTx) *wire.MsgBlock {
	var tree chain.MerkleTree
	for _, tx := range txs {
		tree.Add(tx.TxHash())
	}
	root, _ := tree.Root()
	b := &wire.MsgBlock{Header: header(prev, root, height), Transactions: txs}
	return b
}

// header is a solved header at regtest's difficulty.
func header(prev, root chainhash.Hash, height int32) wire.BlockHeader {
	h := wire.BlockHeader{Version: 0x20000000, PrevBlock: prev, MerkleRoot: root, Bits: params.PowLimitBits,
		Timestamp: params.GenesisBlock.Header.Timestamp.Add(time.Duration(height) * 10 * time.Minute)}
	target := blockchain.CompactToBig(h.Bits)
	for {
		hash := h.BlockHash()
		if blockchain.HashToBig(&hash).Cmp(target) <= 0 {
			return h
		}
		h.Nonce++
	}
}

func serialize(t testing.TB, b *wire.MsgBlock) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := b.Serialize(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// dataBytes is the data each filling transaction carries.
const dataBytes = 1 << 20

// writeLarge writes the large block to path, a transaction at a time, and
// its header last, once the merkle root is known.
func writeLarge(t testing.TB, path string, prev chainhash.Hash, height int32, size int64, big *wire.MsgTx) *Block {
	t.Helper()
	cb, outputs := coinbase(height, 3), len(big.TxOut)
	fixed := int64(cb.SerializeSize() + big.SerializeSize())
	bigHash, value := big.TxHash(), big.TxOut[0].Value
	filler := int64(filling(bigHash, value, 0, dataBytes).SerializeSize())
	fillers := max(int((size-fixed)/filler), 0)
	if fillers > outputs {
		t.Fatalf("a block of %d bytes needs %d filling transactions, more than the %d outputs they spend", size, fillers, outputs)
	}
	f, err := os.Create(path + ".tmp")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	count := 2 + fillers
	if _, err := w.Write(make([]byte, chain.HeaderSize)); err != nil {
		t.Fatal(err)
	}
	if err := wire.WriteVarInt(w, 0, uint64(count)); err != nil {
		t.Fatal(err)
	}
	var tree chain.MerkleTree
	put := func(tx *wire.MsgTx) {
		if err := tx.Serialize(w); err != nil {
			t.Fatal(err)
		}
		tree.Add(tx.TxHash())
	}
	put(cb)
	put(big)
	for i := range fillers {
		put(filling(bigHash, value, uint32(i), dataBytes))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	root, _ := tree.Root()
	h := header(prev, root, height)
	var hb bytes.Buffer
	_ = h.Serialize(&hb)
	if _, err := f.WriteAt(hb.Bytes(), 0); err != nil {
		t.Fatal(err)
	}
	info, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	return &Block{Hash: h.BlockHash(), Header: h, Path: path, Size: info.Size(), Txs: count}
}

// filling spends output vout, worth value, of the large transaction big
// whole, with a zero-value OP_FALSE OP_RETURN output of data bytes (which
// no store keeps as a UTXO).
func filling(big chainhash.Hash, value int64, vout uint32, data int) *wire.MsgTx {
	tx := wire.NewMsgTx(1)
	tx.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Hash: big, Index: vout}, SignatureScript: []byte{0x51}, Sequence: wire.MaxTxInSequenceNum})
	tx.AddTxOut(wire.NewTxOut(value, Script(4)))
	payload := bytes.Repeat([]byte{byte(vout), byte(vout >> 8), byte(vout >> 16), 0x5a}, data/4)
	script := append([]byte{0x00, 0x6a, 0x4e}, binary.LittleEndian.AppendUint32(nil, uint32(len(payload)))...)
	tx.AddTxOut(wire.NewTxOut(0, append(script, payload...)))
	return tx
}

// Open opens a block's file.
func (b *Block) Open() (io.ReadCloser, error) { return os.Open(b.Path) }
