package utxo

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
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

// asFormat1 rewrites a store's metadata into format 1's layout: the block
// height as a value of its own, the chain state without it.
func asFormat1(t *testing.T, eng engine.Engine, height uint32) {
	t.Helper()
	raw, err := eng.GetMeta(ctx, metaChain)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if raw != nil {
		if err := json.Unmarshal(raw, &fields); err != nil {
			t.Fatal(err)
		}
		delete(fields, "height")
		if raw, err = json.Marshal(fields); err != nil {
			t.Fatal(err)
		}
		if err := eng.PutMeta(ctx, metaChain, raw); err != nil {
			t.Fatal(err)
		}
	}
	if err := eng.PutMeta(ctx, metaSeparateHeight, binary.BigEndian.AppendUint32(nil, height)); err != nil {
		t.Fatal(err)
	}
	if err := putInternalState(ctx, eng, internalState{Format: formatWithSeparateHeight, Network: "mainnet", Engine: eng.Name(), DBState: dbStateClosed}); err != nil {
		t.Fatal(err)
	}
}

// TestAFormat1StoreIsUpgradedOnOpen: a store whose height was kept beside
// its chain state opens with the height in the chain state and the current
// format: the tip's height when it has a tip (also when a crash left the
// old height one block behind), the stored height when it has none.
func TestAFormat1StoreIsUpgradedOnOpen(t *testing.T) {
	blocks := chainBlocks(t, btcChain)[:3]
	for _, c := range []struct {
		name      string
		blocks    int
		oldHeight uint32
		want      uint32
	}{
		{"tip and height agree", 3, 2, 2},
		{"a crash left the height behind the tip", 3, 1, 2},
		{"no tip: the height a validator set", 0, 500, 500},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng := memory.New()
			db, err := Open(ctx, eng, Options{Network: "mainnet"})
			if err != nil {
				t.Fatal(err)
			}
			connectAll(t, db, blocks[:c.blocks])
			asFormat1(t, eng, c.oldHeight)

			reopened, err := Open(ctx, eng, Options{Network: "mainnet"})
			if err != nil {
				t.Fatalf("opening a format-1 store: %v", err)
			}
			if got := reopened.GetBlockHeight(); got != c.want {
				t.Errorf("block height %d after the upgrade, want %d", got, c.want)
			}
			if tip, ok, err := reopened.Tip(ctx); err != nil || ok != (c.blocks > 0) || (ok && tip.Hash != blocks[c.blocks-1].Hash) {
				t.Errorf("tip %v (ok %v, err %v) after the upgrade", tip, ok, err)
			}
			raw, err := eng.GetMeta(ctx, metaInternalState)
			if err != nil {
				t.Fatal(err)
			}
			var state internalState
			if err := json.Unmarshal(raw, &state); err != nil || state.Format != FormatVersion {
				t.Errorf("internal state %s after the upgrade (%v), want format %d", raw, err, FormatVersion)
			}
		})
	}
}

// TestAFormat1StoreOfAnotherNetworkIsNotUpgraded: a store refused for its
// network keeps its format-1 metadata as it was.
func TestAFormat1StoreOfAnotherNetworkIsNotUpgraded(t *testing.T) {
	eng := memory.New()
	db, err := Open(ctx, eng, Options{Network: "mainnet"})
	if err != nil {
		t.Fatal(err)
	}
	connectAll(t, db, chainBlocks(t, btcChain)[:2])
	asFormat1(t, eng, 1)
	before, _ := eng.GetMeta(ctx, metaChain)
	var stateErr *StateError
	if _, err := Open(ctx, eng, Options{Network: "testnet"}); !errors.As(err, &stateErr) || stateErr.Field != "network" {
		t.Fatalf("opening a mainnet format-1 store as testnet: %v, want the network refused", err)
	}
	if after, _ := eng.GetMeta(ctx, metaChain); string(after) != string(before) {
		t.Fatalf("the refused store's chain state changed:\n%s\n%s", before, after)
	}
}
