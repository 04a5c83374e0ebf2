package memory_test

import (
	"context"
	"flag"
	"fmt"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
	"github.com/utxostore/utxostore/engine/memory"
)

// flags are the suite's command-line settings (-long).
var flags = enginetest.RegisterFlags(flag.CommandLine)

func TestConformance(t *testing.T) {
	clock := enginetest.NewClock()
	enginetest.Run(t, enginetest.Harness{
		Open:  func(testing.TB, string) engine.Engine { return memory.NewWithClock(clock.Now) },
		Clock: clock,
	})
}

// Two memory engines must agree with each other: this checks that the
// differential driver itself is deterministic.
func TestDifferentialSelf(t *testing.T) {
	a, b := memory.New(), memory.New()
	defer a.Close()
	defer b.Close()
	enginetest.Differential(t, a, b, 1, flags.DifferentialOps())
}

func put(value []byte) engine.UpdateFunc {
	return func([]byte) (engine.Mutation, error) {
		return engine.Mutation{Action: engine.Put, Value: value}, nil
	}
}

func mustUpdate(t *testing.T, e engine.Engine, updates ...engine.Update) {
	t.Helper()
	errs, err := e.Update(context.Background(), updates)
	if err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
}

func mustGetOne(t *testing.T, e engine.Engine, k engine.Key) []byte {
	t.Helper()
	values, err := e.Get(context.Background(), []engine.Key{k})
	if err != nil {
		t.Fatal(err)
	}
	return values[0]
}

// Values grow past and shrink within a record's buffer, down to the empty
// value, which stays a record.
func TestValuesGrowAndShrink(t *testing.T) {
	e := memory.New()
	defer e.Close()
	k := enginetest.K(1)
	for _, want := range []string{"short", "a much longer value than before", "mid-sized", "", "grown again"} {
		mustUpdate(t, e, engine.Update{Key: k, Fn: put([]byte(want))})
		got := mustGetOne(t, e, k)
		if got == nil || string(got) != want {
			t.Fatalf("after a put of %q: got %q (nil: %v)", want, got, got == nil)
		}
	}
}

// A removed record's slot goes to the next new record; nothing of the
// removed one shows through it.
func TestRemovedSlotIsReused(t *testing.T) {
	e := memory.New()
	defer e.Close()
	ctx := context.Background()
	gone, next := enginetest.K(1), enginetest.K(2)
	mustUpdate(t, e, engine.Update{Key: gone, Fn: func([]byte) (engine.Mutation, error) {
		return engine.Mutation{Action: engine.Put, Value: []byte("removed"), Terms: engine.Terms{DeleteAtHeight: 7}}, nil
	}})
	if err := e.Delete(ctx, []engine.Key{gone}); err != nil {
		t.Fatal(err)
	}
	mustUpdate(t, e, engine.Update{Key: next, Fn: put([]byte("new"))})
	if got := mustGetOne(t, e, gone); got != nil {
		t.Fatalf("removed record reads %q", got)
	}
	if got := mustGetOne(t, e, next); string(got) != "new" {
		t.Fatalf("new record reads %q", got)
	}
	seen := map[engine.Key]string{}
	if err := e.ForEach(ctx, func(k engine.Key, v []byte) error { seen[k] = string(v); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[next] != "new" {
		t.Fatalf("ForEach saw %q, want only the new record", seen)
	}
	err := e.Scan(ctx, engine.ByDeleteAtHeight, 0, ^uint32(0), func(k engine.Key, _ uint32) error {
		return fmt.Errorf("scan found key %x, which has no delete-at-height", k)
	})
	if err != nil {
		t.Fatal(err)
	}
}
