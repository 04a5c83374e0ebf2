package enginetest

import (
	"context"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/memory"
)

// With several calls in flight, a record becomes spendable only once the
// call creating it has returned, records become spendable in the order
// they were created, and no more calls than the limit are in flight.
func TestCallsInFlightMakeRecordsSpendableInOrderOnceStored(t *testing.T) {
	e := memory.New()
	ctx := context.Background()
	const limit, calls, perCall = 3, 40, 5
	var order []uint32
	spendable := func(i uint32) {
		values, err := e.Get(ctx, []engine.Key{BenchKey(i)})
		if err != nil {
			t.Fatal(err)
		}
		if values[0] == nil {
			t.Fatalf("record %d made spendable before the call creating it stored it", i)
		}
		order = append(order, i)
	}
	c := &callsInFlight{limit: limit}
	next := uint32(0)
	// send sends a call creating perCall records, each held until gate
	// closes.
	send := func(gate chan struct{}) {
		var batch []engine.Update
		var created []uint32
		for range perCall {
			batch = append(batch, engine.Update{Key: BenchKey(next), Fn: func([]byte) (engine.Mutation, error) {
				<-gate
				return engine.Mutation{Action: engine.Put, Value: []byte{1, 0}}, nil
			}})
			created = append(created, next)
			next++
		}
		if err := c.send(e, batch, created, spendable); err != nil {
			t.Fatal(err)
		}
		if len(c.pending) > limit {
			t.Fatalf("%d calls in flight, limit %d", len(c.pending), limit)
		}
	}

	// The first calls cannot return until the gate opens: sending them
	// must not wait for them, nor make their records spendable.
	gate := make(chan struct{})
	for range limit {
		send(gate)
	}
	if len(order) != 0 {
		t.Fatalf("records %v spendable while the calls creating them are held", order)
	}
	close(gate)
	for range calls - limit {
		send(gate)
	}
	if err := c.wait(0, spendable); err != nil {
		t.Fatal(err)
	}
	if len(order) != calls*perCall {
		t.Fatalf("%d records spendable, want %d", len(order), calls*perCall)
	}
	for i, got := range order {
		if got != uint32(i) {
			t.Fatalf("record %d made spendable at place %d", got, i)
		}
	}
	if c.times.Count() != calls {
		t.Fatalf("%d calls timed, want %d", c.times.Count(), calls)
	}
}
