package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo/model"
)

// demoCoin is an output the synthetic chain can spend.
type demoCoin struct {
	out      wire.OutPoint
	value    int64
	height   uint32
	coinbase bool
}

// demoChain builds a deterministic synthetic chain on regtest's genesis
// block: every block above it has a coinbase, and from the height where
// coinbases mature each block also holds a few transactions spending
// earlier outputs (mature coinbases and ordinary outputs) into two new
// ones. The same seed gives the same chain.
type demoChain struct {
	rng    *rand.Rand
	pool   []demoCoin
	prev   chainhash.Hash
	blocks []*chain.Block
	// spent remembers one spend for the demo's example URLs.
	firstSpend *demoSpend
}

type demoSpend struct {
	parent  chainhash.Hash
	spender chainhash.Hash
}

func newDemoChain(seed uint64) *demoChain {
	return &demoChain{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// demoScript is a pay-to-pubkey-hash script of a key hash made from a
// number, so outputs differ and each has an address; nobody holds the key,
// and the store does not run scripts (the spending inputs sign nothing).
func demoScript(tag uint32) []byte {
	script, _ := txscript.NewScriptBuilder().AddOp(txscript.OP_DUP).AddOp(txscript.OP_HASH160).
		AddData(btcutil.Hash160(binary.LittleEndian.AppendUint32([]byte("utxostore demo"), tag))).
		AddOp(txscript.OP_EQUALVERIFY).AddOp(txscript.OP_CHECKSIG).Script()
	return script
}

func (c *demoChain) build(blocks int) []*chain.Block {
	for h := uint32(0); h < uint32(blocks); h++ {
		c.blocks = append(c.blocks, c.block(h))
	}
	return c.blocks
}

func (c *demoChain) block(height uint32) *chain.Block {
	if height == 0 {
		// A regtest store takes no other block 0. Its coinbase joins no
		// pool: a genesis coinbase is never spent.
		b := regtestGenesis()
		c.prev = b.Hash
		return b
	}
	coinbase := wire.NewMsgTx(1)
	coinbase.AddTxIn(&wire.TxIn{
		PreviousOutPoint: wire.OutPoint{Index: wire.MaxPrevOutIndex},
		SignatureScript:  binary.LittleEndian.AppendUint32([]byte{0x04}, height), // BIP34: unique coinbases
		Sequence:         wire.MaxTxInSequenceNum,
	})
	coinbase.AddTxOut(wire.NewTxOut(50e8, demoScript(height)))
	txs := []*chain.Tx{chain.NewTx(coinbase)}
	created := c.spends(height, &txs)
	c.pool = append(c.pool, created...)
	c.pool = append(c.pool, demoCoin{out: wire.OutPoint{Hash: txs[0].ID}, value: 50e8, height: height, coinbase: true})
	b := c.seal(height, c.prev, txs)
	c.prev = b.Hash
	return b
}

// regtestGenesis is regtest's genesis block.
func regtestGenesis() *chain.Block {
	var raw bytes.Buffer
	_ = chaincfg.RegressionNetParams.GenesisBlock.Serialize(&raw) // a bytes.Buffer does not fail
	b, err := chain.ParseBlock(raw.Bytes())
	if err != nil {
		panic(fmt.Sprintf("demo: regtest's genesis block does not parse: %v", err))
	}
	return b
}

// spends adds to txs a few transactions spending outputs of the pool into
// two new ones each, and returns the new outputs.
func (c *demoChain) spends(height uint32, txs *[]*chain.Tx) []demoCoin {
	var created []demoCoin
	for n := c.rng.IntN(4); n > 0; n-- {
		i, ok := c.pickSpendable(height)
		if !ok {
			break
		}
		coin := c.pool[i]
		c.pool = append(c.pool[:i], c.pool[i+1:]...)
		tx := wire.NewMsgTx(1)
		tx.AddTxIn(&wire.TxIn{PreviousOutPoint: coin.out, SignatureScript: []byte{0x51}, Sequence: wire.MaxTxInSequenceNum})
		fee := int64(1000)
		first := (coin.value - fee) * int64(1+c.rng.IntN(9)) / 10
		tx.AddTxOut(wire.NewTxOut(first, demoScript(c.rng.Uint32())))
		tx.AddTxOut(wire.NewTxOut(coin.value-fee-first, demoScript(c.rng.Uint32())))
		ctx := chain.NewTx(tx)
		*txs = append(*txs, ctx)
		if c.firstSpend == nil {
			c.firstSpend = &demoSpend{parent: coin.out.Hash, spender: ctx.ID}
		}
		for vout, o := range tx.TxOut {
			created = append(created, demoCoin{out: wire.OutPoint{Hash: ctx.ID, Index: uint32(vout)}, value: o.Value, height: height})
		}
	}
	return created
}

// seal makes the block of txs at height on prev: its merkle root, its
// time, and a nonce that meets regtest's proof of work.
func (c *demoChain) seal(height uint32, prev chainhash.Hash, txs []*chain.Tx) *chain.Block {
	msg := wire.MsgBlock{Header: wire.BlockHeader{Version: 1, PrevBlock: prev, MerkleRoot: merkleRoot(txs),
		Timestamp: demoTime(height), Bits: chaincfg.RegressionNetParams.PowLimitBits, Nonce: c.rng.Uint32()}}
	mine(&msg.Header)
	for _, tx := range txs {
		msg.Transactions = append(msg.Transactions, tx.Msg)
	}
	var raw bytes.Buffer
	_ = msg.Serialize(&raw) // a bytes.Buffer does not fail
	b, err := chain.ParseBlock(raw.Bytes())
	if err != nil {
		panic(fmt.Sprintf("demo: synthetic block %d does not parse: %v", height, err))
	}
	return b
}

// staleTwin is a block that lost a race with b at height: on the same
// parent, with the same transactions but another coinbase. Connected
// first and then reorganised away, it leaves the chain as if it had never
// been, but for the records of b's transactions, mined in a block that
// left the chain and then in b.
func (c *demoChain) staleTwin(b *chain.Block, height uint32) *chain.Block {
	coinbase := b.Txs[0].Msg.Copy()
	coinbase.TxIn[0].SignatureScript = append(coinbase.TxIn[0].SignatureScript, []byte("stale")...)
	txs := append([]*chain.Tx{chain.NewTx(coinbase)}, b.Txs[1:]...)
	return c.seal(height, b.Header.PrevBlock, txs)
}

// mine searches the header's nonce until its hash meets the target its
// bits encode (regtest's: half of all hashes meet it).
func mine(h *wire.BlockHeader) {
	target := blockchain.CompactToBig(h.Bits)
	for {
		hash := h.BlockHash()
		if blockchain.HashToBig(&hash).Cmp(target) <= 0 {
			return
		}
		h.Nonce++
	}
}

// pickSpendable picks a random output that may be spent at height: not a
// coinbase younger than the maturity, and not created in this block.
func (c *demoChain) pickSpendable(height uint32) (int, bool) {
	for tries := 0; tries < 8 && len(c.pool) > 0; tries++ {
		i := c.rng.IntN(len(c.pool))
		coin := c.pool[i]
		if coin.coinbase && coin.height+model.CoinbaseMaturity > height {
			continue
		}
		if coin.value < 10_000 {
			continue
		}
		return i, true
	}
	return 0, false
}

// merkleRoot is Bitcoin's merkle root of the txids.
func merkleRoot(txs []*chain.Tx) chainhash.Hash {
	level := make([]chainhash.Hash, len(txs))
	for i, tx := range txs {
		level[i] = tx.ID
	}
	for len(level) > 1 {
		if len(level)%2 == 1 {
			level = append(level, level[len(level)-1])
		}
		next := level[:0:0]
		for i := 0; i < len(level); i += 2 {
			next = append(next, chainhash.DoubleHashH(append(level[i][:], level[i+1][:]...)))
		}
		level = next
	}
	return level[0]
}
