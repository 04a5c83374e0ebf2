package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
	"github.com/utxostore/utxostore/engine/memory"
)

// A record with a time to live is there until its clock passes the expiry,
// and then gone for every reader: Get, Update, ForEach and CreateOnly.
func TestRecordExpiresByTheEnginesClock(t *testing.T) {
	clock := enginetest.NewClock()
	e := memory.NewWithClock(clock.Now)
	defer e.Close()
	ctx := context.Background()
	short, long := engine.Key{1}, engine.Key{2}
	if err := e.CreateOnly(ctx, short, []byte("lock"), time.Second); err != nil {
		t.Fatal(err)
	}
	if err := e.CreateOnly(ctx, long, []byte("lock"), time.Hour); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second - time.Nanosecond)
	if err := e.CreateOnly(ctx, short, []byte("lock"), time.Second); !errors.Is(err, engine.ErrExists) {
		t.Fatalf("CreateOnly a nanosecond before expiry: got %v, want ErrExists", err)
	}

	clock.Advance(time.Nanosecond)
	values, err := e.Get(ctx, []engine.Key{short, long})
	if err != nil {
		t.Fatal(err)
	}
	if values[0] != nil || values[1] == nil {
		t.Fatalf("Get after the short expiry: %q, %q; want nil and the long lock", values[0], values[1])
	}
	var seen []engine.Key
	if err := e.ForEach(ctx, func(k engine.Key, _ []byte) error { seen = append(seen, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != long {
		t.Fatalf("ForEach after the short expiry saw %v, want only the long lock", seen)
	}
	var saw []byte
	if _, err := e.Update(ctx, []engine.Update{{Key: short, Fn: func(cur []byte) (engine.Mutation, error) {
		saw = cur
		return engine.Mutation{Action: engine.Keep}, nil
	}}}); err != nil {
		t.Fatal(err)
	}
	if saw != nil {
		t.Fatalf("Update saw the expired value %q", saw)
	}
	if err := e.CreateOnly(ctx, short, []byte("again"), 0); err != nil {
		t.Fatalf("CreateOnly after expiry: %v", err)
	}
}
