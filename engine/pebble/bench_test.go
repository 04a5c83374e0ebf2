package pebble_test

import (
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
	"github.com/utxostore/utxostore/engine/pebble"
)

// BenchmarkCreateSpendMix runs enginetest's create/spend workload (flags
// -live, -batch, -sync, -benchdir; see engine/enginetest/bench.go) and
// reports Pebble's own LSM write amplification beside the device's. Run
// the 10-million-record case by hand:
//
//	go test -run '^$' -bench CreateSpendMix -benchtime 1000000x ./engine/pebble -live 10000000
//
// Use -benchtime Nx: the load is not timed but still takes minutes at
// that size.
func BenchmarkCreateSpendMix(b *testing.B) {
	enginetest.BenchCreateSpendMix(b, enginetest.BenchHarness[*pebble.Engine]{
		Open: func(b *testing.B, dir string, mode engine.SyncMode) *pebble.Engine {
			e, err := pebble.Open(dir, pebble.Options{Sync: mode, Logf: b.Logf})
			if err != nil {
				b.Fatal(err)
			}
			return e
		},
		Live:  200_000,
		Local: true,
		DiskBytes: func(_ *testing.B, e *pebble.Engine) int64 {
			return int64(e.Metrics().DiskSpaceUsage())
		},
		Report: func(b *testing.B, e *pebble.Engine) {
			total := e.Metrics().Total()
			b.ReportMetric(total.WriteAmp(), "lsm-write-amp")
		},
	})
}
