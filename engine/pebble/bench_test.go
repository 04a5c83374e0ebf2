package pebble_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
	"github.com/utxostore/utxostore/engine/pebble"
	"github.com/utxostore/utxostore/internal/testlog"
)

// BenchmarkCreateSpendMix runs enginetest's create/spend workload (flags
// -live, -batch, -sync, -benchdir; see engine/enginetest/bench.go) and
// reports Pebble's own LSM write amplification beside the device's. Run
// the 10-million-record case by hand:
//
//	go test -run '^$' -bench CreateSpendMix -benchtime 1000000x ./engine/pebble -live 10000000
//
// Use -benchtime Nx: the load is not timed but still takes minutes at
// that size. PEBBLE_BENCH_CACHE sets the block cache in bytes (default
// 64 MiB), to compare Pebble with as much memory as another engine uses.
func BenchmarkCreateSpendMix(b *testing.B) {
	var cache int64
	if s := os.Getenv("PEBBLE_BENCH_CACHE"); s != "" {
		var err error
		if cache, err = strconv.ParseInt(s, 10, 64); err != nil || cache <= 0 {
			b.Fatalf("PEBBLE_BENCH_CACHE=%q: want a positive number of bytes", s)
		}
		b.Logf("block cache %d bytes", cache)
	}
	enginetest.BenchCreateSpendMix(b, enginetest.BenchHarness[*pebble.Engine]{
		Open: func(b *testing.B, dir string, mode engine.SyncMode) *pebble.Engine {
			e, err := pebble.Open(dir, pebble.Options{Sync: mode, Logger: testlog.Logger(b), CacheSize: cache})
			if err != nil {
				b.Fatal(err)
			}
			return e
		},
		Live:  200_000,
		Flags: flags,
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
