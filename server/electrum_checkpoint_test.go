package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/server"
)

// TestElectrumProvesAHeaderAfterAReorganisationNotYetAnnounced: once
// the store has reorganised onto another branch, a checkpoint proof
// (blockchain.block.header with cp_height) leads from the new branch's
// header to its root, before the daemon announces the branch's blocks
// (it announces from a queue of its own, here never). The daemon used to
// append the new branch's hashes to the old branch's it had kept, and
// proved headers against a root of neither chain.
func TestElectrumProvesAHeaderAfterAReorganisationNotYetAnnounced(t *testing.T) {
	ctx := context.Background()
	path, chainBlocks := trustingPathOfFive(t)
	srv, _ := servePathForTest(t, path, server.Options{Network: "mainnet", ElectrumAddr: "127.0.0.1:0"})
	c, r := dialElectrum(t, srv, 30*time.Second)
	proof := func(height, cp uint32) (header []byte, branch []string, root string) {
		t.Helper()
		if _, err := fmt.Fprintf(c, `{"jsonrpc":"2.0","id":1,"method":"blockchain.block.header","params":[%d,%d]}`+"\n", height, cp); err != nil {
			t.Fatal(err)
		}
		var answer struct {
			Result struct {
				Header string   `json:"header"`
				Branch []string `json:"branch"`
				Root   string   `json:"root"`
			} `json:"result"`
			Error any `json:"error"`
		}
		line, err := r.ReadBytes('\n')
		if err == nil {
			err = json.Unmarshal(line, &answer)
		}
		if err != nil || answer.Error != nil {
			t.Fatalf("header %d with cp_height %d: %s (%v)", height, cp, line, err)
		}
		header, err = hex.DecodeString(answer.Result.Header)
		if err != nil {
			t.Fatal(err)
		}
		return header, answer.Result.Branch, answer.Result.Root
	}
	// The daemon keeps the hashes of blocks 0 to 2.
	proof(1, 2)

	// Blocks 2 to 4 give way to a branch of four blocks of the test's own.
	var branch []*chain.Block
	prev := chainBlocks[1].Hash
	for height := uint32(2); height <= 5; height++ {
		b := ownBlock(t, prev, height)
		branch = append(branch, b)
		prev = b.Hash
	}
	if err := path.Reorg(ctx, []*chain.Block{chainBlocks[4], chainBlocks[3], chainBlocks[2]}, branch); err != nil {
		t.Fatal(err)
	}

	header, hashes, root := proof(2, 5)
	if got := chainhash.DoubleHashH(header); got != branch[0].Hash {
		t.Fatalf("header 2 is of block %s, not of the branch's %s", got, branch[0].Hash)
	}
	h, pos := chainhash.DoubleHashH(header), 2
	for _, s := range hashes {
		sib, err := chainhash.NewHashFromStr(s)
		if err != nil {
			t.Fatal(err)
		}
		if pos&1 == 0 {
			h = chainhash.DoubleHashH(append(append([]byte{}, h[:]...), sib[:]...))
		} else {
			h = chainhash.DoubleHashH(append(append([]byte{}, sib[:]...), h[:]...))
		}
		pos >>= 1
	}
	if h.String() != root {
		t.Fatalf("the branch of header 2 leads to %s, not to the root %s", h, root)
	}
}

// trustingPathOfFive is indexedPathOf(t, true), which takes the test's
// own blocks, holding mainnet blocks 0 to 4.
func trustingPathOfFive(t *testing.T) (*blockpath.Path, []*chain.Block) {
	t.Helper()
	path := indexedPathOf(t, true)
	chainBlocks := server.MainnetChainBlocks(t, 5)
	for height, b := range chainBlocks {
		if err := path.Connect(context.Background(), b, uint32(height)); err != nil {
			t.Fatal(err)
		}
	}
	return path, chainBlocks
}

// ownBlock is a mainnet block of one coinbase on top of prev, of no proof
// of work (the path's rules trust it).
func ownBlock(t *testing.T, prev chainhash.Hash, height uint32) *chain.Block {
	return ownBlockOf(t, prev, height, []byte{0x51})
}

// ownBlockOf is a mainnet block at height on top of prev, of no proof of
// work, whose coinbase pays 50 BTC to script, with txs after it.
func ownBlockOf(t *testing.T, prev chainhash.Hash, height uint32, script []byte, txs ...*wire.MsgTx) *chain.Block {
	t.Helper()
	coinbase := wire.NewMsgTx(1)
	coinbase.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: wire.MaxPrevOutIndex},
		SignatureScript: binary.LittleEndian.AppendUint32([]byte{0x04, 0xff}, height), Sequence: wire.MaxTxInSequenceNum})
	coinbase.AddTxOut(wire.NewTxOut(50e8, script))
	all := append([]*wire.MsgTx{coinbase}, txs...)
	var tree chain.MerkleTree
	for _, tx := range all {
		tree.Add(tx.TxHash())
	}
	root, _ := tree.Root()
	msg := wire.MsgBlock{Header: wire.BlockHeader{Version: 1, PrevBlock: prev, MerkleRoot: root,
		Bits: 0x1d00ffff, Timestamp: time.Unix(1_300_000_000+int64(height), 0)}, Transactions: all}
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
