package sozu

import (
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
)

// crashOpener opens the tiny tuning, so that the killed writer is caught in
// the middle of spills, deep-page writes and value-log appends.
func crashOpener(mode engine.SyncMode) func(testing.TB, string) engine.Engine {
	return func(t testing.TB, dir string) engine.Engine {
		o := tinyOptions()
		o.Sync = mode
		return openFor(t, dir, o)
	}
}

// Every acknowledged op must survive SIGKILL.
func TestCrashSyncAlways(t *testing.T) {
	enginetest.Crash(t, enginetest.CrashHarness{Open: crashOpener(engine.SyncAlways), Sync: engine.SyncAlways})
}

// Every op before the last acknowledged Checkpoint must survive SIGKILL.
func TestCrashSyncBlock(t *testing.T) {
	enginetest.Crash(t, enginetest.CrashHarness{Open: crashOpener(engine.SyncBlock), Sync: engine.SyncBlock})
}
