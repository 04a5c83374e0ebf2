package sozu

import (
	"flag"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/internal/testlog"
)

// tinyOptions makes every mechanism work hard on little data: buckets of a
// few entries, so spills, deep layers (and the last, growing layer),
// out-of-line values and several shards all happen within a test.
// flags are the suite's command-line settings (-long, the benchmark's).
var flags = enginetest.RegisterFlags(flag.CommandLine)

func tinyOptions() Options {
	return Options{
		Shards:        4,
		Layer0Buckets: 2,
		FanoutBits:    1,
		Layers:        5,
		Capacity:      []int{400, 600},
		FlowRatio:     []float64{0.5, 0.6},
		InlineMax:     150,
		// Compact the value logs at most page checkpoints, so the crash
		// and differential tests run through compactions too.
		ValueLogGarbageBytes: 2 << 10,
		// A value-log write every few values, so that values are read
		// from the buffer, from the one before it and from the file.
		ValueLogBufferBytes: 1 << 10,
		FilterKeys:          64,
		// Two dirty buckets per shard: most batches write some of them
		// out and keep the others.
		DirtyBytes: 4 * 2 * PageSize,
		// A page checkpoint every few Checkpoints, so both kinds of block
		// boundary (log fsync only, and pages) are exercised.
		CheckpointLogBytes: 4 << 10,
	}
}

func openFor(t testing.TB, dir string, o Options) *Engine {
	t.Helper()
	o.Logger = testlog.Logger(t)
	e, err := Open(dir, o)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return e
}

func TestConformance(t *testing.T) {
	for name, o := range map[string]Options{"tiny": tinyOptions(), "default": {}, "tinySyncBlock": func() Options { o := tinyOptions(); o.Sync = engine.SyncBlock; return o }()} {
		t.Run(name, func(t *testing.T) {
			enginetest.Run(t, enginetest.Harness{
				Open:       func(t testing.TB, dir string) engine.Engine { return openFor(t, dir, o) },
				Persistent: true,
			})
		})
	}
}

// TestDifferential runs under SyncBlock to keep the run short (its crashes
// come right after a block boundary, so they lose nothing and the log
// since the last page checkpoint is replayed); SyncAlways is covered by the
// conformance and crash tests.
func TestDifferential(t *testing.T) {
	tiny := tinyOptions()
	tiny.Sync = engine.SyncBlock
	for name, o := range map[string]Options{"tiny": tiny, "default": {Sync: engine.SyncBlock}} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			r := &restarting{Engine: openFor(t, dir, o), t: t, dir: dir, opts: o}
			defer func() { r.Engine.Close() }()
			ref := memory.New()
			defer ref.Close()
			enginetest.Differential(t, ref, r, 7, flags.DifferentialOps())
			st, err := r.Engine.(*Engine).Stats(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("layers %+v; value-log compactions %d", st.Layers, st.ValueLogCompactions)
		})
	}
}
