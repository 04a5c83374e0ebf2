package follow

import (
	"bytes"
	"context"
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/internal/peertest"
	"github.com/utxostore/utxostore/utxo"
)

// coinbaseBlock is a block at height (1 to 16) on top of prev holding only
// a coinbase, told apart by tag, with its proof of work solved.
func coinbaseBlock(prev chainhash.Hash, height, tag byte) *wire.MsgBlock {
	coinbase := wire.NewMsgTx(1)
	script := []byte{txscript.OP_1 - 1 + height, tag} // BIP34: the height first
	coinbase.AddTxIn(wire.NewTxIn(wire.NewOutPoint(&chainhash.Hash{}, wire.MaxPrevOutIndex), script, nil))
	coinbase.AddTxOut(wire.NewTxOut(50e8, []byte{0x51}))
	b := wire.NewMsgBlock(header(prev, chainhash.Hash{}))
	_ = b.AddTransaction(coinbase)
	b.Header.MerkleRoot = blockchain.CalcMerkleRoot([]*btcutil.Tx{btcutil.NewTx(coinbase)}, false)
	solve(&b.Header)
	return b
}

func parsed(t *testing.T, b *wire.MsgBlock) *chain.Block {
	t.Helper()
	var raw bytes.Buffer
	if err := b.Serialize(&raw); err != nil {
		t.Fatal(err)
	}
	p, err := chain.ParseBlock(raw.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReorgFetchesWhatTheBlockStoreLost: a block store that holds another
// branch than the store's (a crash of a --sync block run can leave one) is
// rolled back to the store's chain when the path opens, so it no longer
// holds the store's block at height 1. The follower asks the peer for
// that block and reorganises onto the branch.
func TestReorgFetchesWhatTheBlockStoreLost(t *testing.T) {
	genesis := simnet.GenesisBlock
	old := coinbaseBlock(genesis.BlockHash(), 1, 1)
	b1 := coinbaseBlock(genesis.BlockHash(), 1, 2)
	b2 := coinbaseBlock(b1.BlockHash(), 2, 3)
	node := &peertest.Peer{
		Headers: func() []*wire.BlockHeader { return []*wire.BlockHeader{&b1.Header, &b2.Header} },
		Blocks: map[chainhash.Hash]*wire.MsgBlock{
			genesis.BlockHash(): genesis, old.BlockHash(): old, b1.BlockHash(): b1, b2.BlockHash(): b2},
	}
	ctx := context.Background()
	store, err := utxo.Open(ctx, memory.New(), utxo.Options{Network: "simnet"})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for h, b := range []*wire.MsgBlock{genesis, old} {
		if err := store.ConnectBlock(ctx, utxo.BlockFromChain(parsed(t, b), uint32(h))); err != nil {
			t.Fatal(err)
		}
	}
	blocks := blockStore(t)
	for h, b := range []*wire.MsgBlock{genesis, b1, b2} { // the branch, over the store's block at 1
		p := parsed(t, b)
		if err := blocks.Put(uint32(h), p.Hash, p.Raw); err != nil {
			t.Fatal(err)
		}
	}
	f := followerOver(t, node.Listen(t), Config{StopAtTip: true}, store, blocks)
	if tip, _ := blocks.Tip(); tip != 0 {
		t.Fatalf("the block store's tip is at height %d once the path is open, want the store's chain's 0", tip)
	}

	if err := runWithin(t, f); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if tip, ok, err := store.Tip(ctx); err != nil || !ok || tip.Hash != b2.BlockHash() {
		t.Fatalf("the store's tip is %s at %d (%v, %v), want the branch's %s", tip.Hash, tip.Height, ok, err, b2.BlockHash())
	}
	if _, err := store.Get(ctx, old.Transactions[0].TxHash()); err == nil {
		t.Error("the disconnected block's coinbase is still in the store")
	}
}
