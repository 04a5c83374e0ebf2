package pebble_test

import (
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
)

// Every op the child saw return must survive SIGKILL.
func TestCrashSyncAlways(t *testing.T) {
	enginetest.Crash(t, enginetest.CrashHarness{Open: opener(engine.SyncAlways), Sync: engine.SyncAlways})
}

// Every op before the last acknowledged Checkpoint must survive SIGKILL.
func TestCrashSyncBlock(t *testing.T) {
	enginetest.Crash(t, enginetest.CrashHarness{Open: opener(engine.SyncBlock), Sync: engine.SyncBlock})
}
