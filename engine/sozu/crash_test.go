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
	enginetest.Crash(t, enginetest.CrashHarness{Open: crashOpener(engine.SyncAlways), Sync: engine.SyncAlways, Long: flags.Long})
}

// Ops that defer their sync survive SIGKILL once a later durable op, or a
// Checkpoint, was acknowledged.
func TestCrashSyncAlwaysDeferred(t *testing.T) {
	enginetest.Crash(t, enginetest.CrashHarness{Open: crashOpener(engine.SyncAlways), Sync: engine.SyncAlways, Deferred: true, Long: flags.Long})
}

// Every op before the last acknowledged Checkpoint must survive SIGKILL.
func TestCrashSyncBlock(t *testing.T) {
	enginetest.Crash(t, enginetest.CrashHarness{Open: crashOpener(engine.SyncBlock), Sync: engine.SyncBlock, Long: flags.Long})
}

// writeFailureOpener is crashOpener with most values inline, so that the
// value logs grow only by the stream's rare large values and a file size
// limit fails page, log and checkpoint writes as often as value-log ones.
func writeFailureOpener(mode engine.SyncMode) func(testing.TB, string) engine.Engine {
	return func(t testing.TB, dir string) engine.Engine {
		o := tinyOptions()
		o.Sync, o.InlineMax, o.Capacity = mode, 1024, []int{1600, 2400}
		return openFor(t, dir, o)
	}
}

// A write that fails (a full disk) loses no acknowledged op either, and
// closing the engine after it leaves a store that opens.
func TestWriteFailureSyncAlways(t *testing.T) {
	enginetest.Crash(t, enginetest.CrashHarness{Open: writeFailureOpener(engine.SyncAlways), Sync: engine.SyncAlways, WriteLimit: 64 << 10, Long: flags.Long})
}

func TestWriteFailureSyncBlock(t *testing.T) {
	enginetest.Crash(t, enginetest.CrashHarness{Open: writeFailureOpener(engine.SyncBlock), Sync: engine.SyncBlock, WriteLimit: 64 << 10, Long: flags.Long})
}
