package sozu

import (
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
	"github.com/utxostore/utxostore/engine/memory"
)

// tinyOptions makes every mechanism work hard on little data: buckets of a
// few entries, so spills, deep layers (and the last, growing layer),
// out-of-line values and several shards all happen within a test.
func tinyOptions() Options {
	return Options{
		Shards:        4,
		Layer0Buckets: 2,
		FanoutBits:    1,
		Layers:        5,
		Capacity:      []int{400, 600},
		FlowRatio:     []float64{0.5, 0.6},
		InlineMax:     150,
		FilterKeys:    64,
		DirtyBytes:    4 << 10,
	}
}

func openFor(t testing.TB, dir string, o Options) *Engine {
	t.Helper()
	o.Logf = t.Logf
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

func TestDifferential(t *testing.T) {
	for name, o := range map[string]Options{"tiny": tinyOptions(), "default": {}} {
		t.Run(name, func(t *testing.T) {
			e := openFor(t, t.TempDir(), o)
			defer e.Close()
			ref := memory.New()
			defer ref.Close()
			enginetest.Differential(t, ref, e, 7, enginetest.DifferentialOps())
			st, err := e.Stats(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("layers %+v", st.Layers)
		})
	}
}
