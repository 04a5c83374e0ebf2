package blockpath

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/blockstore"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/utxo/model"
)

// stage stages b in the block store.
func stage(t *testing.T, bs *blockstore.Store, b *chain.Block) *blockstore.Staged {
	t.Helper()
	st, err := bs.Stage(bytes.NewReader(b.Raw), int64(len(b.Raw)), b.Hash)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// noneStaged fails t when a staging file is left in dir's block store.
func noneStaged(t *testing.T, dir string) {
	t.Helper()
	if left, _ := filepath.Glob(filepath.Join(dir, "blocks", "incoming", "*")); len(left) != 0 {
		t.Fatalf("staging files left: %v", left)
	}
}

// TestConnectStagedIsConnect: a chain whose every other block is staged
// and connected by ConnectStaged leaves the store, the index and the block
// store as Connect of every block in memory does; so do the store's own
// blocks staged again (a derived store taking them), and the blocks staged
// are kept where they were staged.
func TestConnectStagedIsConnect(t *testing.T) {
	c := newTestChains(t)
	whole := openDir(t, t.TempDir(), "sozu", engine.SyncAlways, true, true)
	defer whole.close(t)
	connectAll(t, whole.path(t), c.A, 0, len(c.A))
	want, err := whole.store.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	s := openDir(t, dir, "sozu", engine.SyncAlways, true, true)
	defer s.close(t)
	p := s.path(t)
	ctx := context.Background()
	for h, b := range c.A {
		if h%2 == 0 {
			connectAll(t, p, c.A, h, h+1)
			continue
		}
		if err := p.ConnectStaged(ctx, stage(t, s.blocks, b), uint32(h)); err != nil {
			t.Fatalf("block %d staged: %v", h, err)
		}
	}
	tip := uint32(len(c.A) - 1)
	level(t, p, tip, c.A[tip])
	if got, err := s.store.Summary(ctx); err != nil || got != want {
		t.Fatalf("staged every other block: %+v %v\nin memory: %+v", got, err, want)
	}
	for _, key := range [][]byte{script(20), script(30), script(3)} {
		got, err := s.index.Balance(index.AddrDesc(key))
		if err != nil {
			t.Fatal(err)
		}
		wantBal, err := whole.index.Balance(index.AddrDesc(key))
		if err != nil || !reflect.DeepEqual(got, wantBal) {
			t.Fatalf("the index's balance of %x: %+v, in memory %+v (%v)", key, got, wantBal, err)
		}
	}
	for h, b := range c.A {
		raw, _, ok, err := s.blocks.Block(uint32(h))
		if err != nil || !ok || !bytes.Equal(raw, b.Raw) {
			t.Fatalf("the block store's block %d: %v %v", h, ok, err)
		}
	}
	if err := p.ConnectStaged(ctx, stage(t, s.blocks, c.A[7]), 7); err != nil {
		t.Fatalf("the store's block 7 staged again: %v", err)
	}
	level(t, p, tip, c.A[tip])
	noneStaged(t, dir)
}

// TestAStagedBlockRefusedChangesNothing: a staged block that fails the
// checks, or that the store refuses, is discarded and changes no store;
// the chain then goes on.
func TestAStagedBlockRefusedChangesNothing(t *testing.T) {
	c := newTestChains(t)
	dir := t.TempDir()
	s := openDir(t, dir, "sozu", engine.SyncAlways, true, true)
	defer s.close(t)
	p := s.path(t)
	ctx := context.Background()
	connectAll(t, p, c.A, 0, 10)
	before, err := s.store.Summary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wrongRoot := block(t, c.A[9].Hash, 10, coinbase(10, 1))
	raw := bytes.Clone(wrongRoot.Raw)
	raw[36] ^= 1 // the merkle root
	damaged, err := chain.ParseBlock(raw)
	if err != nil {
		t.Fatal(err)
	}
	err = p.ConnectStaged(ctx, stage(t, s.blocks, damaged), 10)
	if ce, ok := errors.AsType[*chain.CheckError](err); !ok || (ce.Check != chain.CheckMerkleRoot && ce.Check != chain.CheckProofOfWork) {
		t.Fatalf("a staged block failing the checks: %v", err)
	}
	spendsNothing := block(t, c.A[9].Hash, 10, coinbase(10, 1), spend(wire.OutPoint{Hash: c.A[9].Txs[0].ID, Index: 7}, 50e8, 2))
	if _, isUtxoErr := errors.AsType[*model.Error](p.ConnectStaged(ctx, stage(t, s.blocks, spendsNothing), 10)); !isUtxoErr {
		t.Fatalf("a staged block spending a missing output: want the store's refusal")
	}
	level(t, p, 9, c.A[9])
	if after, err := s.store.Summary(ctx); err != nil || after != before {
		t.Fatalf("the refused blocks changed the store: %+v %v", after, err)
	}
	noneStaged(t, dir)
	if err := p.ConnectStaged(ctx, stage(t, s.blocks, c.A[10]), 10); err != nil {
		t.Fatal(err)
	}
	level(t, p, 10, c.A[10])
}
