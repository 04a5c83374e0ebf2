package pebble_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/engine/pebble"
	"github.com/utxostore/utxostore/internal/dirstate"
	"github.com/utxostore/utxostore/internal/fsutil"
	"github.com/utxostore/utxostore/internal/testlog"
)

// opener returns a harness Open for the sync mode; a small memtable keeps
// the tests' memory down and makes flushes happen.
// flags are the suite's command-line settings (-long, the benchmark's).
var flags = enginetest.RegisterFlags(flag.CommandLine)

func opener(mode engine.SyncMode) func(testing.TB, string) engine.Engine {
	return openerOn(mode, nil)
}

// openerOn opens engines that read clock; nil means the wall clock.
func openerOn(mode engine.SyncMode, clock *enginetest.Clock) func(testing.TB, string) engine.Engine {
	var now func() time.Time
	if clock != nil {
		now = clock.Now
	}
	return func(t testing.TB, dir string) engine.Engine {
		t.Helper()
		e, err := pebble.Open(dir, pebble.Options{Sync: mode, MemTableSize: 4 << 20, CacheSize: 8 << 20, Logger: testlog.Logger(t), Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
}

func TestConformance(t *testing.T) {
	clock := enginetest.NewClock()
	enginetest.Run(t, enginetest.Harness{Open: openerOn(engine.SyncAlways, clock), Persistent: true, Clock: clock})
}

func TestConformanceSyncBlock(t *testing.T) {
	clock := enginetest.NewClock()
	enginetest.Run(t, enginetest.Harness{Open: openerOn(engine.SyncBlock, clock), Persistent: true, Clock: clock})
}

// The differential runs under SyncBlock: it checks semantics, not
// durability, and a million fsyncs would take far too long with -long.
func TestDifferential(t *testing.T) {
	e := opener(engine.SyncBlock)(t, t.TempDir())
	ref := memory.New()
	defer ref.Close()
	defer e.Close()
	enginetest.Differential(t, ref, e, 1, flags.DifferentialOps())
}

func TestRefusesAnotherEnginesDir(t *testing.T) {
	dir := t.TempDir()
	if err := fsutil.ClaimDir(dir, "sozu"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "layer0.dat"), []byte("not pebble"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := dirstate.Of(t, dir)
	_, err := pebble.Open(dir, pebble.Options{})
	var wrong *fsutil.WrongEngineError
	if !errors.As(err, &wrong) || wrong.Found != "sozu" {
		t.Fatalf("opening a sozu directory: got %v, want a WrongEngineError naming sozu", err)
	}
	dirstate.MustBeUnchanged(t, dir, before)
}

func TestRefusesUnmarkedDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "stray"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before := dirstate.Of(t, dir)
	if _, err := pebble.Open(dir, pebble.Options{}); err == nil {
		t.Fatal("opened a non-empty directory without a marker")
	}
	dirstate.MustBeUnchanged(t, dir, before)
}
