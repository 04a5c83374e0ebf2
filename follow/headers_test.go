package follow

import (
	"context"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/blockstore"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/utxo"
)

// branch returns n headers on top of parent, told apart by seed.
func branch(parent chainhash.Hash, n int, seed byte) []*wire.BlockHeader {
	var out []*wire.BlockHeader
	for i := range n {
		h := header(parent, chainhash.Hash{seed, byte(i)})
		out = append(out, h)
		parent = h.BlockHash()
	}
	return out
}

func TestPeerChainAttach(t *testing.T) {
	// The store holds heights 0..5; its locator names 5, 4 and 0.
	store := []chainhash.Hash{{0}, {1}, {2}, {3}, {4}, {5}}
	c := newPeerChain(5, []chainhash.Hash{store[5], store[4], store[0]}, []int32{5, 4, 0}, simnet)

	ahead := branch(store[5], 3, 1)
	if top, err := c.attach(ahead); err != nil || top != 8 || c.base != 5 || c.at(8) != ahead[2].BlockHash() {
		t.Fatalf("extending the store's tip: top %d, base %d, err %v", top, c.base, err)
	}
	reorg := branch(ahead[0].BlockHash(), 4, 2) // the peer reorganised above height 6
	if top, err := c.attach(reorg); err != nil || top != 10 || c.at(7) != reorg[0].BlockHash() {
		t.Fatalf("a reorganisation above the base: top %d, err %v", top, err)
	}
	if _, known := c.heights[ahead[2].BlockHash()]; known {
		t.Error("the replaced branch's block is still known")
	}
	fork := branch(store[4], 2, 3) // the peer's chain leaves the store's below its tip
	if top, err := c.attach(fork); err != nil || top != 6 || c.base != 4 || len(c.hashes) != 2 {
		t.Fatalf("a fork below the store's tip: top %d, base %d, %d hashes, err %v", top, c.base, len(c.hashes), err)
	}
	if _, known := c.locator[store[5]]; known {
		t.Error("the store's block above the fork is still taken for the peer's")
	}

	if _, err := c.attach(branch(chainhash.Hash{9}, 1, 4)); !errors.Is(err, errUnknownParent) {
		t.Errorf("a header on an unknown block: %v", err)
	}
	broken := append(branch(store[0], 1, 5), branch(chainhash.Hash{8}, 1, 6)...)
	if _, err := c.attach(broken); !errors.Is(err, errBrokenHeaders) {
		t.Errorf("headers that do not form a chain: %v", err)
	}
	if c.tip() != 6 {
		t.Errorf("refused headers changed the chain: tip %d", c.tip())
	}
}

func TestPeerChainEmptyStore(t *testing.T) {
	genesis := *simnet.GenesisHash
	c := newPeerChain(-1, []chainhash.Hash{genesis}, []int32{0}, simnet)
	if c.tip() != 0 || c.at(0) != genesis {
		t.Fatalf("an empty store's peer chain: tip %d", c.tip())
	}
	if top, err := c.attach(branch(genesis, 2, 1)); err != nil || top != 2 {
		t.Fatalf("headers on genesis: top %d, err %v", top, err)
	}
}

// TestNewRefusesRetentionBelowWindow: a block store that keeps fewer
// blocks than a reorganisation may disconnect is refused; one that keeps
// the window, or every block, is taken.
func TestNewRefusesRetentionBelowWindow(t *testing.T) {
	store, err := utxo.Open(context.Background(), memory.New(), utxo.Options{Network: "simnet"})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for retention, refused := range map[uint32]bool{9: true, 10: false, 0: false} {
		blocks, err := blockstore.Open(t.TempDir(), blockstore.Options{Retention: retention})
		if err != nil {
			t.Fatal(err)
		}
		path, err := blockpath.Open(context.Background(), blockpath.Config{Store: store, Rules: chain.BlockRules{Params: simnet}, Blocks: blocks})
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(Config{Peer: "127.0.0.1:1", Network: simnetNetwork, Path: path, RollbackWindow: 10})
		if got := errors.Is(err, ErrRetentionBelowWindow); got != refused {
			t.Errorf("a retention of %d with a rollback window of 10: %v", retention, err)
		}
		blocks.Close()
	}
}
