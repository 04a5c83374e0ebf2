package utxo

import (
	"path/filepath"
	"testing"

	"github.com/utxostore/utxostore/coinstats"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/pebble"
	"github.com/utxostore/utxostore/engine/sozu"
)

// TestStatsWorkedOutAfterAKill: a process killed while it connects blocks
// leaves blocks whose changes to the set's statistics the chain state
// lacks, with their pending records. A store opened read-only works them
// out from those records, and one opened to write hands them to its
// worker: both report the statistics of an import that was never killed.
// Once the block killed inside is sent again (the block path's recovery
// rule: until then the store may hold its first writes, which a walk
// counts), verify agrees with a walk, and a clean close leaves none
// pending.
func TestStatsWorkedOutAfterAKill(t *testing.T) {
	blocks := chainBlocks(t, btcChain)[:3000]
	reference := newStore(t, Options{})
	connectAll(t, reference, blocks[:len(blocks)-1])
	want, err := reference.SetStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	killedIn := blocks[len(blocks)-1:]
	connectAll(t, reference, killedIn)
	wantAll, err := reference.SetStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	readOnly := map[string]func(dir string) (engine.Engine, error){
		"pebble": func(dir string) (engine.Engine, error) { return pebble.Open(dir, pebble.Options{ReadOnly: true}) },
		"sozu":   func(dir string) (engine.Engine, error) { return sozu.Open(dir, sozu.Options{ReadOnly: true}) },
	}
	for name, openReadOnly := range readOnly {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), name)
			killChildInBlock(t, name, dir, len(blocks), len(blocks)-1, 1)

			eng, err := openReadOnly(dir)
			if err != nil {
				t.Fatal(err)
			}
			ro, err := Open(ctx, eng, Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			cs, err := ro.loadChainState(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if cs.StatsBehind == 0 {
				t.Fatal("the killed run left no block pending: the test tests nothing")
			}
			if got, err := ro.SetStats(ctx); err != nil || got != want {
				t.Fatalf("read-only, with %d blocks pending: %+v (%v), want %+v", cs.StatsBehind, got, err, want)
			}
			if err := ro.Close(); err != nil {
				t.Fatal(err)
			}

			db, err := Open(ctx, openCrashEngine(t, name, dir), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got, err := db.SetStats(ctx); err != nil || got != want {
				t.Fatalf("reopened, with %d blocks pending: %+v (%v), want %+v", cs.StatsBehind, got, err, want)
			}
			connectAll(t, db, killedIn)
			if got, err := db.SetStats(ctx); err != nil || got != wantAll {
				t.Fatalf("with the block killed inside sent again: %+v (%v), want %+v", got, err, wantAll)
			}
			mustVerify(t, db)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db, err = Open(ctx, openCrashEngine(t, name, dir), Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if cs, err := db.loadChainState(ctx); err != nil || cs.StatsBehind != 0 {
				t.Fatalf("after a clean close, %d blocks are pending (%v)", cs.StatsBehind, err)
			}
			if got, err := db.SetStats(ctx); err != nil || got != wantAll {
				t.Fatalf("after a clean close: %+v (%v), want %+v", got, err, wantAll)
			}
		})
	}
}

// TestStatsFoldedEveryFewBlocks: a block boundary folds the worker's
// results into the chain state only once statsFoldBlocks of them wait, so
// the block path multiplies once every few blocks; the statistics at each
// tip stay those a walk finds, also when a block whose change waits is
// disconnected and connected again.
func TestStatsFoldedEveryFewBlocks(t *testing.T) {
	blocks := chainBlocks(t, btcChain)[:2*statsFoldBlocks+4]
	db := newStore(t, Options{})
	behind := func() uint32 {
		t.Helper()
		if err := db.stats.wait(); err != nil {
			t.Fatal(err)
		}
		cs, err := db.loadChainState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return cs.StatsBehind
	}
	for i, b := range blocks[:statsFoldBlocks] {
		connectAll(t, db, []Block{b})
		if got := behind(); got != uint32(i+1) {
			t.Fatalf("after block %d, with %d blocks worked out at its boundary, %d blocks are pending, want %d (none folded)", b.Height, i, got, i+1)
		}
	}
	below, err := db.SetStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fold := blocks[statsFoldBlocks]
	connectAll(t, db, []Block{fold})
	if got := behind(); got != 1 {
		t.Fatalf("after block %d, with %d blocks worked out, %d blocks are pending, want 1 (the block itself)", fold.Height, statsFoldBlocks, got)
	}
	mustVerify(t, db)
	if err := db.DisconnectBlock(ctx, fold); err != nil {
		t.Fatal(err)
	}
	if got := behind(); got != 0 {
		t.Fatalf("after the tip's disconnection, %d blocks are pending, want 0", got)
	}
	if got, err := db.SetStats(ctx); err != nil || got != below {
		t.Fatalf("after the tip's disconnection: %+v (%v), want %+v", got, err, below)
	}
	connectAll(t, db, blocks[statsFoldBlocks:])
	mustVerify(t, db)
}

// TestStatsWorkerKeepsTheProductOfWhatIsLeft: a fold multiplies in the
// product the worker kept beside its last finished change. When the
// worker finished more between the fold and its chain state's write, the
// products of those left are those changes' alone.
func TestStatsWorkerKeepsTheProductOfWhatIsLeft(t *testing.T) {
	w := &statsWorker{}
	var deltas [4]coinstats.Stats
	for i := range deltas {
		if !deltas[i].Add(&coinstats.Coin{Outpoint: coinstats.Outpoint{Vout: uint32(i)}, Height: 1, Value: uint64(i + 1), Script: []byte{0x51}}) {
			t.Fatal("the coin is not in the set")
		}
		w.done = append(w.done, statsDone{height: uint32(10 + i), delta: &deltas[i], upTo: product(w.lastUpTo(), &deltas[i])})
	}
	of := func(changes ...*coinstats.Stats) coinstats.Summary {
		var p coinstats.Stats
		for _, c := range changes {
			p.Combine(c)
		}
		return p.Finalize()
	}
	if got, want := of(w.lastUpTo()), of(&deltas[0], &deltas[1], &deltas[2], &deltas[3]); got != want {
		t.Fatalf("the product of four changes: %+v, want %+v", got, want)
	}
	n, first, last, upTo := w.foldable(false)
	if n != 4 || first != 10 || last != 13 || of(upTo) != of(&deltas[0], &deltas[1], &deltas[2], &deltas[3]) {
		t.Fatalf("foldable: %d blocks, %d to %d, %+v", n, first, last, of(upTo))
	}
	w.drop(2)
	if got, want := of(w.lastUpTo()), of(&deltas[2], &deltas[3]); got != want {
		t.Fatalf("after two were dropped: %+v, want the product of the last two, %+v", got, want)
	}
}
