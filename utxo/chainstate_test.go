package utxo

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/memory"
)

// errCut is the failure of a metadata write that a crash prevented.
var errCut = errors.New("the process died before this metadata write")

// cutMeta lets the first `left` metadata writes through and fails every
// later one, as a crash at that point would leave the store (the writes
// before it kept, none after); left < 0 lets every write through.
type cutMeta struct {
	engine.Engine
	left int
}

func (c *cutMeta) PutMeta(ctx context.Context, name string, value []byte) error {
	if c.left == 0 {
		return errCut
	}
	c.left--
	return c.Engine.PutMeta(ctx, name, value)
}

// TestTipAndHeightAgreeAfterACrashInABlock stops a block's metadata
// writes after each of them in turn, as a crash would, reopens the store
// and expects its tip and its height to be those of one block, and the
// block, sent again, to connect (or to be the tip already).
func TestTipAndHeightAgreeAfterACrashInABlock(t *testing.T) {
	blocks := chainBlocks(t, btcChain)[:3]
	for cut := 0; ; cut++ {
		eng := memory.New()
		cutter := &cutMeta{Engine: eng, left: -1}
		db, err := Open(ctx, cutter, Options{})
		if err != nil {
			t.Fatal(err)
		}
		connectAll(t, db, blocks[:2])
		cutter.left = cut
		if err := db.ConnectBlock(ctx, blocks[2]); err == nil {
			if cut == 0 {
				t.Fatal("a block connected without writing any metadata")
			}
			return // every metadata write of the block went through
		} else if !errors.Is(err, errCut) {
			t.Fatalf("cut after %d metadata writes: %v", cut, err)
		}

		reopened, err := Open(ctx, eng, Options{})
		if err != nil {
			t.Fatal(err)
		}
		tip, ok, err := reopened.Tip(ctx)
		if err != nil || !ok {
			t.Fatalf("cut after %d metadata writes: no tip (%v)", cut, err)
		}
		if height := reopened.GetBlockHeight(); height != tip.Height || (tip.Hash != blocks[1].Hash && tip.Hash != blocks[2].Hash) {
			t.Fatalf("cut after %d metadata writes: the tip is %s at height %d, the block height %d", cut, tip.Hash, tip.Height, height)
		}
		checkBlockMetadata(t, reopened, fmt.Sprintf("cut after %d metadata writes", cut))
		if tip.Hash == blocks[1].Hash {
			if err := reopened.ConnectBlock(ctx, blocks[2]); err != nil {
				t.Fatalf("cut after %d metadata writes: sending the block again: %v", cut, err)
			}
		}
		if got := summary(t, reopened); got.Height != 2 || got.Blocks != 3 {
			t.Fatalf("cut after %d metadata writes: %+v", cut, got)
		}
		reopened.Close()
	}
}

// TestTipAndMetadataAgreeAfterACrashInADisconnection stops a block's
// disconnection after each of its metadata writes in turn and reopens the
// store: the tip is one of the two blocks, its metadata is there and none
// above it, and the disconnection, sent again when the block is still the
// tip, goes through.
func TestTipAndMetadataAgreeAfterACrashInADisconnection(t *testing.T) {
	blocks := chainBlocks(t, btcChain)[:3]
	for cut := 0; ; cut++ {
		eng := memory.New()
		cutter := &cutMeta{Engine: eng, left: -1}
		db, err := Open(ctx, cutter, Options{})
		if err != nil {
			t.Fatal(err)
		}
		connectAll(t, db, blocks)
		cutter.left = cut
		if err := db.DisconnectBlock(ctx, blocks[2]); err == nil {
			if cut == 0 {
				t.Fatal("a block disconnected without writing any metadata")
			}
			return
		} else if !errors.Is(err, errCut) {
			t.Fatalf("cut after %d metadata writes: %v", cut, err)
		}
		reopened, err := Open(ctx, eng, Options{})
		if err != nil {
			t.Fatal(err)
		}
		what := fmt.Sprintf("disconnection cut after %d metadata writes", cut)
		checkBlockMetadata(t, reopened, what)
		tip, _, err := reopened.Tip(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if tip.Hash == blocks[2].Hash {
			if err := reopened.DisconnectBlock(ctx, blocks[2]); err != nil {
				t.Fatalf("%s: disconnecting the block again: %v", what, err)
			}
		} else if tip.Hash != blocks[1].Hash {
			t.Fatalf("%s: the tip is %s at %d", what, tip.Hash, tip.Height)
		}
		checkBlockMetadata(t, reopened, what)
		reopened.Close()
	}
}

// checkBlockMetadata expects the metadata of every block up to the tip,
// the tip's included, and none above it.
func checkBlockMetadata(t *testing.T, db *DB, what string) {
	t.Helper()
	tip, ok, err := db.Tip(ctx)
	if err != nil || !ok {
		t.Fatalf("%s: no tip (%v)", what, err)
	}
	for h := uint32(0); h <= tip.Height; h++ {
		if _, held, err := db.BlockAt(ctx, h); err != nil || !held {
			t.Fatalf("%s: the metadata of block %d, below the tip at %d: %v %v", what, h, tip.Height, held, err)
		}
	}
	for h := tip.Height + 1; h <= tip.Height+2; h++ {
		if raw, err := db.eng.GetMeta(ctx, blockMetaName(h)); err != nil || raw != nil {
			t.Fatalf("%s: metadata of height %d, above the tip at %d: %q (%v)", what, h, tip.Height, raw, err)
		}
	}
}

// failingMeta is an engine whose metadata cannot be read: an I/O error.
type failingMeta struct{ engine.Engine }

var errRead = errors.New("input/output error")

func (failingMeta) GetMeta(context.Context, string) ([]byte, error) { return nil, errRead }

// TestTipReturnsItsError expects a failed read of the chain state to be
// returned by Tip, never taken for an empty store.
func TestTipReturnsItsError(t *testing.T) {
	db := newStore(t, Options{})
	connectAll(t, db, chainBlocks(t, btcChain)[:2])
	broken := &DB{eng: failingMeta{db.eng}, opts: db.opts}
	if _, ok, err := broken.Tip(ctx); !errors.Is(err, errRead) || ok {
		t.Fatalf("Tip over a failing engine: ok %v, err %v; want the engine's error", ok, err)
	}
}
