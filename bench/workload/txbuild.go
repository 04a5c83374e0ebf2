package workload

import (
	"encoding/binary"
	"math/rand/v2"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo"
)

// Scripts are structurally valid byte patterns of realistic sizes; nothing
// in the store checks signatures, so none are made.

// sigScript looks like a P2PKH unlocking script: a 72-byte signature push
// and a 33-byte key push (106 bytes).
var sigScript = func() []byte {
	s := make([]byte, 0, 106)
	s = append(s, 72)
	for i := 0; i < 72; i++ {
		s = append(s, byte(0x30+i))
	}
	s = append(s, 33, 0x02)
	for i := 0; i < 32; i++ {
		s = append(s, byte(0xa0+i))
	}
	return s
}()

// p2pkh returns OP_DUP OP_HASH160 <20 bytes> OP_EQUALVERIFY OP_CHECKSIG
// (25 bytes), the 20 bytes drawn from seed and vout: a transaction's
// outputs are made from one seed it keeps, so that the generator can make
// a spent output's script again instead of holding it.
func p2pkh(seed uint64, vout uint32) []byte {
	var mix rand.PCG
	mix.Seed(seed, uint64(vout))
	s := make([]byte, 25)
	s[0], s[1], s[2] = 0x76, 0xa9, 0x14
	binary.LittleEndian.PutUint64(s[3:], mix.Uint64())
	binary.LittleEndian.PutUint64(s[11:], mix.Uint64())
	binary.LittleEndian.PutUint32(s[19:], uint32(mix.Uint64()))
	s[23], s[24] = 0x88, 0xac
	return s
}

// dataScript is OP_RETURN with 16 bytes of data: never stored as a UTXO
// when its value is zero.
func dataScript(rng *rand.Rand) []byte {
	s := make([]byte, 18)
	s[0], s[1] = 0x6a, 16
	binary.LittleEndian.PutUint64(s[2:], rng.Uint64())
	binary.LittleEndian.PutUint64(s[10:], rng.Uint64())
	return s
}

// coinbaseTx pays value to one output, its script made from scriptSeed.
// The unlocking script carries the height (BIP-34), the branch and the
// seed, so that competing blocks at one height, and chains of different
// seeds, never share a coinbase txid.
func coinbaseTx(scriptSeed uint64, height, branch uint32, seed uint64, value int64) *chain.Tx {
	script := []byte{4}
	script = binary.LittleEndian.AppendUint32(script, height)
	script = append(script, 12)
	script = binary.LittleEndian.AppendUint32(script, branch)
	script = binary.LittleEndian.AppendUint64(script, seed)
	msg := wire.NewMsgTx(1)
	msg.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: wire.MaxPrevOutIndex}, SignatureScript: script, Sequence: wire.MaxTxInSequenceNum})
	msg.AddTxOut(&wire.TxOut{Value: value, PkScript: p2pkh(scriptSeed, 0)})
	return chain.NewTx(msg)
}

// spendTx spends ins and pays outs.
func spendTx(ins []wire.OutPoint, outs []*wire.TxOut) *chain.Tx {
	msg := wire.NewMsgTx(2)
	for _, in := range ins {
		msg.AddTxIn(&wire.TxIn{PreviousOutPoint: in, SignatureScript: sigScript, Sequence: wire.MaxTxInSequenceNum})
	}
	for _, out := range outs {
		msg.AddTxOut(out)
	}
	return chain.NewTx(msg)
}

// genesisTime is the timestamp of Bitcoin's genesis block: a synthetic
// block at height h is dated ten minutes per height after it.
const genesisTime = 1231006505

// newBlock builds the synthetic block at height on prev: a header naming
// its parent and its transactions' merkle root, the block's hash being the
// header's, as the block path and the address index take it. Competing
// blocks at one height differ by their coinbases (coinbaseTx), so by their
// roots. Nothing checks proof of work: bench trusts its blocks, as
// import --trust-blocks does.
func newBlock(prev chainhash.Hash, height uint32, txs []*chain.Tx) *utxo.Block {
	var tree chain.MerkleTree
	for _, tx := range txs {
		tree.Add(tx.ID)
	}
	root, _ := tree.Root()
	header := wire.BlockHeader{Version: 4, PrevBlock: prev, MerkleRoot: root,
		Timestamp: time.Unix(genesisTime+600*int64(height), 0), Bits: 0x207fffff}
	return &utxo.Block{Hash: header.BlockHash(), PrevHash: prev, Height: height, Txs: txs, Header: &header}
}
