package pebble

import (
	"context"
	"testing"
	"time"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
)

// Expired lock records are removed physically at the next Checkpoint, with
// their time-to-live entries, and a live one is kept.
func TestCheckpointSweepsExpiredRecords(t *testing.T) {
	clock := enginetest.NewClock()
	e, err := Open(t.TempDir(), Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	short, long := engine.Key{1}, engine.Key{2}
	if err := e.CreateOnly(ctx, short, []byte("lock"), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := e.CreateOnly(ctx, long, []byte("lock"), time.Hour); err != nil {
		t.Fatal(err)
	}
	clock.Advance(5 * time.Millisecond) // the short one expires
	if err := e.Checkpoint(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if r, err := e.load(short); err != nil || r != nil {
		t.Fatalf("expired record still stored after Checkpoint: %+v %v", r, err)
	}
	if r, err := e.load(long); err != nil || r == nil {
		t.Fatalf("live record swept: %v", err)
	}
	n := 0
	lower, upper := prefixBounds(prefixTTL)
	if err := e.iterate(lower, upper, func(_, _ []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d time-to-live entries left, want 1", n)
	}
}

// An update that keeps an expired record removes it instead.
func TestUpdateCleansExpiredRecord(t *testing.T) {
	clock := enginetest.NewClock()
	e, err := Open(t.TempDir(), Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	k := engine.Key{3}
	if err := e.CreateOnly(ctx, k, []byte("lock"), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	clock.Advance(5 * time.Millisecond)
	var saw []byte
	_, err = e.Update(ctx, []engine.Update{{Key: k, Fn: func(cur []byte) (engine.Mutation, error) {
		saw = cur
		return engine.Mutation{Action: engine.Keep}, nil
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if saw != nil {
		t.Fatalf("update saw the expired value %q", saw)
	}
	if r, err := e.load(k); err != nil || r != nil {
		t.Fatalf("expired record still stored: %+v %v", r, err)
	}
}

// A panicking update function must not leave the writer lock held.
func TestPanickingUpdateReleasesWriter(t *testing.T) {
	e, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	func() {
		defer func() { _ = recover() }()
		_, _ = e.Update(context.Background(), []engine.Update{{Key: engine.Key{1}, Fn: func([]byte) (engine.Mutation, error) { panic("bad function") }}})
	}()
	if err := e.CreateOnly(context.Background(), engine.Key{1}, []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
}
