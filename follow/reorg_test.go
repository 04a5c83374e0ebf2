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

	"github.com/utxostore/utxostore/blockstore"
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

// storeOnChain is a store, and a block store, holding the genesis block
// and three blocks on it, which it returns from genesis up.
func storeOnChain(t *testing.T) (*utxo.DB, *blockstore.Store, []*wire.MsgBlock) {
	t.Helper()
	ctx := context.Background()
	bs := []*wire.MsgBlock{simnet.GenesisBlock}
	for h := byte(1); h <= 3; h++ {
		bs = append(bs, coinbaseBlock(bs[h-1].BlockHash(), h, 1))
	}
	store, err := utxo.Open(ctx, memory.New(), utxo.Options{Network: "simnet"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	blocks := blockStore(t)
	for h, b := range bs {
		p := parsed(t, b)
		if err := store.ConnectBlock(ctx, utxo.BlockFromChain(p, uint32(h))); err != nil {
			t.Fatal(err)
		}
		if err := blocks.Put(uint32(h), p.Hash, p.Raw); err != nil {
			t.Fatal(err)
		}
	}
	return store, blocks, bs
}

// blocksByHash indexes blocks as a peer serves them.
func blocksByHash(bs ...*wire.MsgBlock) map[chainhash.Hash]*wire.MsgBlock {
	m := map[chainhash.Hash]*wire.MsgBlock{}
	for _, b := range bs {
		m[b.BlockHash()] = b
	}
	return m
}

// TestAPeerBehindTheStoreDoesNotRewindIt: a peer on the store's own chain
// whose headers stop below the store's tip (a node a block behind, which
// announces its new tip, or any peer replaying the store's headers) leaves
// the store where it is: the follower waits at its tip. The follower used
// to take such a peer's chain for a branch of no blocks, and reorganised
// onto it, disconnecting the store's valid blocks; a peer further behind
// than the rollback window stopped the follower with a fatal error.
func TestAPeerBehindTheStoreDoesNotRewindIt(t *testing.T) {
	for _, c := range []struct {
		name   string
		window uint32
		height int // of the peer's tip
	}{
		{"one block behind", 0, 2},
		{"further behind than the rollback window", 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			store, blocks, bs := storeOnChain(t)
			node := &peertest.Peer{Headers: func() []*wire.BlockHeader { return []*wire.BlockHeader{&bs[c.height].Header} }, Blocks: blocksByHash(bs...)}
			f := followerOver(t, node.Listen(t), Config{StopAtTip: true, RollbackWindow: c.window}, store, blocks)
			if err := runWithin(t, f); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if tip, _, _ := store.Tip(context.Background()); tip.Hash != bs[3].BlockHash() {
				t.Fatalf("the store's tip is %s at %d, want its own %s at 3", tip.Hash, tip.Height, bs[3].BlockHash())
			}
		})
	}
}

// TestTheBranchWithMoreWorkIsFollowed: a peer's branch replaces the
// store's blocks above the fork only when it has more chain work than
// they have, whatever its length: a branch of one block at the
// proof-of-work limit does not replace two such blocks, one block of 256
// times their difficulty does. The follower used to adopt any branch the
// peer showed, however little work it had.
func TestTheBranchWithMoreWorkIsFollowed(t *testing.T) {
	for _, c := range []struct {
		name    string
		bits    uint32
		adopted bool
	}{
		{"less work", simnet.PowLimitBits, false},
		{"more work", simnet.PowLimitBits - 0x01000000, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			store, blocks, bs := storeOnChain(t)
			x2 := coinbaseBlock(bs[1].BlockHash(), 2, 9)
			x2.Header.Bits = c.bits
			solve(&x2.Header)
			node := &peertest.Peer{Headers: func() []*wire.BlockHeader { return []*wire.BlockHeader{&x2.Header} }, Blocks: blocksByHash(x2)}
			f := followerOver(t, node.Listen(t), Config{StopAtTip: true}, store, blocks)
			if err := runWithin(t, f); err != nil {
				t.Fatalf("Run: %v", err)
			}
			want := map[bool]*wire.MsgBlock{false: bs[3], true: x2}[c.adopted]
			if tip, _, _ := store.Tip(context.Background()); tip.Hash != want.BlockHash() {
				t.Fatalf("the store's tip is %s at %d, want %s", tip.Hash, tip.Height, want.BlockHash())
			}
		})
	}
}
