package utxo

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/engine/pebble"
	"github.com/utxostore/utxostore/engine/sozu"
)

// A store opened read-only over an engine opened read-only reads what a
// writing run left, refuses every write with an error that unwraps to
// engine.ErrReadOnly, and leaves the store as the writing run closed it.
func TestReadOnlyStoreRefusesWrites(t *testing.T) {
	engines := map[string]func(dir string, readOnly bool) (engine.Engine, error){
		"pebble": func(dir string, readOnly bool) (engine.Engine, error) {
			return pebble.Open(dir, pebble.Options{ReadOnly: readOnly})
		},
		"sozu": func(dir string, readOnly bool) (engine.Engine, error) {
			return sozu.Open(dir, sozu.Options{ReadOnly: readOnly})
		},
	}
	for name, open := range engines {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), name)
			eng, err := open(dir, false)
			if err != nil {
				t.Fatal(err)
			}
			db, err := Open(ctx, eng, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.SetBlockHeight(ctx, 42); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}

			for range 2 {
				eng, err := open(dir, true)
				if err != nil {
					t.Fatal(err)
				}
				db, err := Open(ctx, eng, Options{ReadOnly: true})
				if err != nil {
					t.Fatal(err)
				}
				if db.UncleanShutdown || db.GetBlockHeight() != 42 {
					t.Errorf("read-only open: unclean shutdown %v, height %d; want a clean store at 42", db.UncleanShutdown, db.GetBlockHeight())
				}
				if err := db.SetBlockHeight(ctx, 43); !errors.Is(err, engine.ErrReadOnly) {
					t.Errorf("SetBlockHeight on a read-only store: %v, want engine.ErrReadOnly", err)
				}
				if err := db.SetMedianBlockTime(ctx, 7); !errors.Is(err, engine.ErrReadOnly) {
					t.Errorf("SetMedianBlockTime on a read-only store: %v, want engine.ErrReadOnly", err)
				}
				if err := eng.Checkpoint(ctx, 43); !errors.Is(err, engine.ErrReadOnly) {
					t.Errorf("Checkpoint of a read-only engine: %v, want engine.ErrReadOnly", err)
				}
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// An engine that holds no store is refused read-only, not given one.
func TestReadOnlyOpenRefusesAnEmptyEngine(t *testing.T) {
	eng := memory.New()
	if _, err := Open(ctx, eng, Options{ReadOnly: true}); !errors.Is(err, ErrNoStore) {
		t.Fatalf("read-only open of an empty engine: %v, want ErrNoStore", err)
	}
	if raw, err := eng.GetMeta(ctx, metaInternalState); err != nil || raw != nil {
		t.Fatalf("the refused open wrote an internal state: %q, %v", raw, err)
	}
}
