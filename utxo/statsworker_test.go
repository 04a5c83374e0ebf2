package utxo

import (
	"path/filepath"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/pebble"
	"github.com/utxostore/utxostore/engine/sozu"
)

// TestStatsWorkedOutAfterAKill: a process killed while it connects blocks
// leaves blocks whose changes to the set's statistics the chain state
// lacks, with their pending records. A store opened read-only works them
// out from those records, and one opened to write hands them to its
// worker: both report the statistics of an import that was never killed,
// verify agrees with a walk, and a clean close leaves none pending.
func TestStatsWorkedOutAfterAKill(t *testing.T) {
	blocks := chainBlocks(t, btcChain)[:3000]
	reference := newStore(t, Options{})
	connectAll(t, reference, blocks[:len(blocks)-1])
	want, err := reference.SetStats(ctx)
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
			if got, err := db.SetStats(ctx); err != nil || got != want {
				t.Fatalf("after a clean close: %+v (%v), want %+v", got, err, want)
			}
		})
	}
}
