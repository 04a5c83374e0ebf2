package blockpath

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/blockstore"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/pebble"
	"github.com/utxostore/utxostore/engine/sozu"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/internal/testlog"
	"github.com/utxostore/utxostore/utxo"
)

var regtest = &chaincfg.RegressionNetParams

// rules are every block check of regtest.
var rules = chain.BlockRules{Params: regtest}

// script is a pay-to-pubkey-hash script for the key hash tag, so the
// address index indexes it.
func script(tag byte) []byte {
	s := []byte{0x76, 0xa9, 20}
	s = append(s, bytes.Repeat([]byte{tag}, 20)...)
	return append(s, 0x88, 0xac)
}

// coinbase pays 50 BTC to tag at height, told apart by its height.
func coinbase(height uint32, tag byte) *wire.MsgTx {
	tx := wire.NewMsgTx(1)
	tx.AddTxIn(&wire.TxIn{
		PreviousOutPoint: wire.OutPoint{Index: wire.MaxPrevOutIndex},
		SignatureScript:  binary.LittleEndian.AppendUint32([]byte{0x04}, height),
		Sequence:         wire.MaxTxInSequenceNum,
	})
	tx.AddTxOut(wire.NewTxOut(50e8, script(tag)))
	return tx
}

// spend pays the whole of prev, worth value, to tag less a fee.
func spend(prev wire.OutPoint, value int64, tag byte) *wire.MsgTx {
	tx := wire.NewMsgTx(1)
	tx.AddTxIn(&wire.TxIn{PreviousOutPoint: prev, SignatureScript: []byte{0x51}, Sequence: wire.MaxTxInSequenceNum})
	tx.AddTxOut(wire.NewTxOut(value-1000, script(tag)))
	return tx
}

// block mines txs on top of prev at regtest's difficulty.
func block(t testing.TB, prev chainhash.Hash, height uint32, txs ...*wire.MsgTx) *chain.Block {
	t.Helper()
	msg := wire.MsgBlock{Header: wire.BlockHeader{Version: 1, PrevBlock: prev, Bits: regtest.PowLimitBits,
		Timestamp: time.Unix(1_600_000_000+int64(height)*600, 0)}, Transactions: txs}
	var ids []*chainhash.Hash
	for _, tx := range txs {
		id := tx.TxHash()
		ids = append(ids, &id)
	}
	msg.Header.MerkleRoot = merkleRoot(ids)
	target := blockchain.CompactToBig(msg.Header.Bits)
	for {
		hash := msg.Header.BlockHash()
		if blockchain.HashToBig(&hash).Cmp(target) <= 0 {
			break
		}
		msg.Header.Nonce++
	}
	var raw bytes.Buffer
	if err := msg.Serialize(&raw); err != nil {
		t.Fatal(err)
	}
	b, err := chain.ParseBlock(raw.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// genesis is regtest's genesis block.
func genesis(t testing.TB) *chain.Block {
	t.Helper()
	var raw bytes.Buffer
	if err := regtest.GenesisBlock.Serialize(&raw); err != nil {
		t.Fatal(err)
	}
	b, err := chain.ParseBlock(raw.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func merkleRoot(ids []*chainhash.Hash) chainhash.Hash {
	level := ids
	for len(level) > 1 {
		if len(level)%2 == 1 {
			level = append(level, level[len(level)-1])
		}
		var next []*chainhash.Hash
		for i := 0; i < len(level); i += 2 {
			h := chainhash.DoubleHashH(append(level[i][:], level[i+1][:]...))
			next = append(next, &h)
		}
		level = next
	}
	return *level[0]
}

// testChains are two branches of one regtest chain: a trunk of coinbases
// long enough for the first ones to mature, then branch A and branch B,
// which fork after height Fork and each spend matured coinbases (the same
// one among them, to different keys).
type testChains struct {
	A, B []*chain.Block
	Fork uint32
}

// aboveFork is what a reorganisation from A to B disconnects: A's blocks
// above the fork, its tip first.
func (c *testChains) aboveFork() []*chain.Block {
	var blocks []*chain.Block
	for h := len(c.A) - 1; h > int(c.Fork); h-- {
		blocks = append(blocks, c.A[h])
	}
	return blocks
}

func newTestChains(t testing.TB) *testChains {
	const trunk, fork, lenA, lenB = 101, 103, 106, 107
	// The chain starts at regtest's genesis block, the only block 0 a
	// regtest store takes.
	base := []*chain.Block{genesis(t)}
	prev := base[0].Hash
	for h := uint32(1); h <= fork; h++ {
		txs := []*wire.MsgTx{coinbase(h, byte(h%7))}
		if h > trunk {
			src := base[h-trunk-1].Txs[0]
			txs = append(txs, spend(wire.OutPoint{Hash: src.ID}, 50e8, 20))
		}
		b := block(t, prev, h, txs...)
		base = append(base, b)
		prev = b.Hash
	}
	branch := func(end uint32, tag byte) []*chain.Block {
		blocks := append([]*chain.Block(nil), base...)
		prev := blocks[fork].Hash
		for h := uint32(fork + 1); h <= end; h++ {
			src := blocks[h-trunk-1].Txs[0]
			b := block(t, prev, h, coinbase(h, tag), spend(wire.OutPoint{Hash: src.ID}, 50e8, tag))
			blocks = append(blocks, b)
			prev = b.Hash
		}
		return blocks
	}
	return &testChains{A: branch(lenA, 30), B: branch(lenB, 40), Fork: fork}
}

// dirStores are the stores of one directory, on a persistent engine.
type dirStores struct {
	store  *utxo.DB
	index  *index.Index
	blocks *blockstore.Store
}

// openDir opens (creating) the store on engineName, the index and the
// block store of dir under the sync mode; withIndex and withBlocks say
// which derived stores to open.
func openDir(t testing.TB, dir, engineName string, sync engine.SyncMode, withIndex, withBlocks bool) *dirStores {
	t.Helper()
	var eng engine.Engine
	var err error
	switch engineName {
	case "pebble":
		eng, err = pebble.Open(filepath.Join(dir, "pebble"), pebble.Options{Sync: sync})
	default:
		eng, err = sozu.Open(filepath.Join(dir, "sozu"), sozu.Options{Sync: sync})
	}
	if err != nil {
		t.Fatal(err)
	}
	s := &dirStores{}
	if s.store, err = utxo.Open(context.Background(), eng, utxo.Options{Network: "regtest"}); err != nil {
		t.Fatal(err)
	}
	noSync := sync == engine.SyncBlock
	if withIndex {
		if s.index, err = index.Open(filepath.Join(dir, "index"), index.Options{Coin: "Regtest", NoSync: noSync}); err != nil {
			t.Fatal(err)
		}
	}
	if withBlocks {
		if s.blocks, err = blockstore.Open(filepath.Join(dir, "blocks"), blockstore.Options{NoSync: noSync}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// path opens the block path over the stores.
func (s *dirStores) path(t testing.TB) *Path {
	t.Helper()
	p, err := s.openPath(t)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (s *dirStores) openPath(t testing.TB) (*Path, error) {
	return Open(context.Background(), Config{Store: s.store, Rules: rules, Blocks: s.blocks, Index: s.index, Logger: testlog.Logger(t)})
}

func (s *dirStores) close(t testing.TB) {
	t.Helper()
	var errs []error
	if s.index != nil {
		errs = append(errs, s.index.Close())
	}
	if s.blocks != nil {
		errs = append(errs, s.blocks.Close())
	}
	errs = append(errs, s.store.Close())
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// connectAll connects blocks[from:to] at their heights.
func connectAll(t testing.TB, p *Path, blocks []*chain.Block, from, to int) {
	t.Helper()
	for h := from; h < to; h++ {
		if err := p.Connect(context.Background(), blocks[h], uint32(h)); err != nil {
			t.Fatalf("block %d: %v", h, err)
		}
	}
}

// follow brings the store to want's tip the way a follower does: the
// derived stores first level up to the fork point with want, then back to
// the fork point in one reorganisation, then from the height the path
// needs. known holds every block by hash, for the store's own blocks.
func follow(ctx context.Context, p *Path, want []*chain.Block, known map[chainhash.Hash]*chain.Block) error {
	store := p.Store()
	for {
		tip, ok, err := store.Tip(ctx)
		if err != nil {
			return err
		}
		fork := int64(-1)
		if ok {
			for fork = int64(tip.Height); fork >= 0; fork-- {
				info, _, err := store.BlockAt(ctx, uint32(fork))
				if err != nil {
					return err
				}
				if fork < int64(len(want)) && info.Hash == want[fork].Hash {
					break
				}
			}
		}
		next, err := p.Next(ctx)
		if err != nil {
			return err
		}
		switch {
		case int64(next) <= fork || (!ok || fork == int64(tip.Height)) && int(next) < len(want):
			if err := p.Connect(ctx, want[next], next); err != nil {
				return err
			}
		case ok && fork < int64(tip.Height):
			var disconnect []*chain.Block
			for h := int64(tip.Height); h > fork; h-- {
				info, _, err := store.BlockAt(ctx, uint32(h))
				if err != nil {
					return err
				}
				disconnect = append(disconnect, known[info.Hash])
			}
			end := min(int64(len(want)), int64(tip.Height)+2)
			if err := p.Reorg(ctx, disconnect, want[fork+1:end]); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

// byHash indexes blocks by their hash.
func byHash(chains ...[]*chain.Block) map[chainhash.Hash]*chain.Block {
	m := map[chainhash.Hash]*chain.Block{}
	for _, blocks := range chains {
		for _, b := range blocks {
			m[b.Hash] = b
		}
	}
	return m
}
