package pebble_test

import (
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
)

// Every op the child saw return must survive SIGKILL.
func TestCrashSyncAlways(t *testing.T) {
	enginetest.Crash(t, enginetest.CrashHarness{Open: opener(engine.SyncAlways), Sync: engine.SyncAlways, Long: flags.Long})
}

// Every op before the last acknowledged Checkpoint must survive SIGKILL.
func TestCrashSyncBlock(t *testing.T) {
	enginetest.Crash(t, enginetest.CrashHarness{Open: opener(engine.SyncBlock), Sync: engine.SyncBlock, Long: flags.Long})
}

// A write that fails (a full disk) loses no acknowledged op either, and
// closing the engine after it leaves a store that opens.
func TestWriteFailureSyncAlways(t *testing.T) {
	enginetest.Crash(t, enginetest.CrashHarness{Open: opener(engine.SyncAlways), Sync: engine.SyncAlways, WriteLimit: 64 << 10, Long: flags.Long})
}

func TestWriteFailureSyncBlock(t *testing.T) {
	enginetest.Crash(t, enginetest.CrashHarness{Open: opener(engine.SyncBlock), Sync: engine.SyncBlock, WriteLimit: 64 << 10, Long: flags.Long})
}

// Ops that defer their sync survive SIGKILL once a later durable op, or a
// Checkpoint, was acknowledged.
func TestCrashSyncAlwaysDeferred(t *testing.T) {
	enginetest.Crash(t, enginetest.CrashHarness{Open: opener(engine.SyncAlways), Sync: engine.SyncAlways, Deferred: true, Long: flags.Long})
}
