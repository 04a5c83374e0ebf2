package redis

import (
	"context"
	"maps"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
)

// A Scan of a namespace with the default 1,024 buckets is one command per
// master, not one per bucket, and finds exactly the entries in its range.
// The masters' own view (MONITOR, counting only this test's keys) is what
// is checked.
func TestScanIsOneCommandPerMaster(t *testing.T) {
	e := openAt(t, clusterAddrs, t.TempDir(), nil)
	defer e.Close()
	ctx := context.Background()
	if e.cluster == nil {
		t.Skip("not a cluster")
	}
	if e.lay.buckets != defaultBuckets {
		t.Fatalf("%d buckets, want the default %d", e.lay.buckets, defaultBuckets)
	}
	const n = 2000 // over most buckets
	want := map[engine.Key]uint32{}
	batch := make([]engine.Update, n)
	for i := range batch {
		k := enginetest.K(uint64(i))
		dah := uint32(1 + i%100)
		if dah >= 20 && dah <= 40 {
			want[k] = dah
		}
		batch[i] = engine.Update{Key: k, Fn: func([]byte) (engine.Mutation, error) {
			return engine.Mutation{Action: engine.Put, Value: []byte("v"), Terms: engine.Terms{DeleteAtHeight: dah, UnminedSince: 7}}, nil
		}}
	}
	if _, err := e.Update(ctx, batch); err != nil {
		t.Fatal(err)
	}
	scan := func() map[engine.Key]uint32 {
		t.Helper()
		got := map[engine.Key]uint32{}
		if err := e.Scan(ctx, engine.ByDeleteAtHeight, 20, 40, func(k engine.Key, term uint32) error {
			got[k] = term
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	scan() // opens the connections

	monitors := map[string]*monitor{}
	var mu sync.Mutex
	err := e.cluster.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		m, err := startMonitor(c.Options().Addr)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		monitors[c.Options().Addr] = m
		return nil
	})
	for _, m := range monitors {
		defer m.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := scan(); !maps.Equal(got, want) {
		t.Errorf("Scan found %d entries, want %d", len(got), len(want))
	}
	for addr, m := range monitors {
		served, err := m.commandsOn(e.lay.ns + ":")
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(served, map[string]int{"evalsha": 1}) {
			t.Errorf("master %s ran %v for one Scan, want one evalsha", addr, served)
		}
	}
}
