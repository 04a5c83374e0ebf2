package enginetest_test

import (
	"flag"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
	"github.com/utxostore/utxostore/engine/memory"
)

// flags are the benchmark's command-line settings.
var flags = enginetest.RegisterFlags(flag.CommandLine)

// BenchmarkCreateSpendMix runs the engines' shared workload on the map
// engine, the ceiling that the workload's own bookkeeping leaves them; it
// also checks the helper without a disk or a cluster:
//
//	go test -run '^$' -bench CreateSpendMix -benchtime 200000x ./engine/enginetest
func BenchmarkCreateSpendMix(b *testing.B) {
	h := enginetest.BenchHarness[*memory.Engine]{Live: 200_000, Flags: flags}
	h.Open = func(*testing.B, string, engine.SyncMode) *memory.Engine { return memory.New() }
	enginetest.BenchCreateSpendMix(b, h)
}
