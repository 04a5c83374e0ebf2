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

// TestReorgFetchesWhatTheBlockStoreLost: a crash after the block store took
// the peer's branch and before the store's Reorg leaves the store on its
// old branch, whose block the block store no longer holds. The follower
// asks the peer for that block and reorganises onto the branch.
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
	f, store := newFollower(t, node.Listen(t), Config{StopAtTip: true})
	ctx := context.Background()
	for h, b := range []*wire.MsgBlock{genesis, old} {
		if err := store.ConnectBlock(ctx, utxo.BlockFromChain(parsed(t, b), uint32(h))); err != nil {
			t.Fatal(err)
		}
	}
	for h, b := range []*wire.MsgBlock{genesis, b1, b2} { // the branch, over the store's block at 1
		p := parsed(t, b)
		if err := f.cfg.Blocks.Put(uint32(h), p.Hash, p.Raw); err != nil {
			t.Fatal(err)
		}
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
