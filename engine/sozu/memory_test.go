package sozu

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/utxostore/utxostore/engine"
)

// TestOpenLeavesTheGoMemoryLimit: the memory budget is the store's, the
// Go runtime's memory limit the process's; opening a store changes no
// process-wide setting, whatever its budget.
func TestOpenLeavesTheGoMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	o, err := ParseTuning("memory=1073741824")
	if err != nil {
		t.Fatal(err)
	}
	if o.MemoryBudget() != 1<<30 || (Options{}).MemoryBudget() != DefaultOptions().MemoryBytes {
		t.Fatalf("budgets %d and %d, want 1 GiB and the default", o.MemoryBudget(), (Options{}).MemoryBudget())
	}
	for _, limit := range []int64{math.MaxInt64, 4 << 30, 512 << 20} {
		debug.SetMemoryLimit(limit)
		openFor(t, t.TempDir(), o).Close()
		if got := debug.SetMemoryLimit(-1); got != limit {
			t.Fatalf("memory limit %d after opening a store with a budget of 1 GiB, want it left at %d", got, limit)
		}
	}
}

// A store whose process's live heap passes three quarters of the memory
// budget says so in its log, once: the collector, held to the budget by
// the Go memory limit, would otherwise slow it with no word. A store well
// within its budget says nothing.
func TestCheckpointWarnsOnceWhenTheHeapOutgrowsTheBudget(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	ctx := context.Background()
	checkpoints := func(o Options) string {
		t.Helper()
		var logged bytes.Buffer
		o.Logger = slog.New(slog.NewTextHandler(&logged, nil))
		e, err := Open(t.TempDir(), o)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		for h := uint32(1); h <= 3; h++ {
			put := func([]byte) (engine.Mutation, error) {
				return engine.Mutation{Action: engine.Put, Value: []byte("value")}, nil
			}
			if _, err := e.Update(ctx, []engine.Update{{Key: engine.Key{byte(h)}, Fn: put}}); err != nil {
				t.Fatal(err)
			}
			if err := e.Checkpoint(ctx, h); err != nil {
				t.Fatal(err)
			}
		}
		return logged.String()
	}

	o := tinyOptions()
	o.ChangeBufferBytes = 64 << 10
	withDefaults, err := o.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	o.MemoryBytes = 2 * withDefaults.bufferBytes()
	// Live data well past the budget, whatever else the test binary holds.
	ballast := make([]byte, 4*o.MemoryBytes)
	runtime.GC()
	logged := checkpoints(o)
	runtime.KeepAlive(ballast)
	if n := strings.Count(logged, "passed three quarters of the memory budget"); n != 1 {
		t.Fatalf("three checkpoints with the live heap past the budget logged the warning %d times, want once:\n%s", n, logged)
	}
	mustContain := fmt.Sprintf("memory_budget_bytes=%d", o.MemoryBytes)
	if !strings.Contains(logged, mustContain) {
		t.Fatalf("the warning does not name the budget (%s):\n%s", mustContain, logged)
	}

	ballast = nil
	debug.SetMemoryLimit(math.MaxInt64)
	runtime.GC()
	o.MemoryBytes = 1 << 40
	if logged := checkpoints(o); strings.Contains(logged, "memory budget") {
		t.Fatalf("a store far within its budget warned:\n%s", logged)
	}
}
