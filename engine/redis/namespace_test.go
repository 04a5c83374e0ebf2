package redis

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
)

// Drop removes every key of its namespace, on every master, and nothing of
// the namespaces whose names begin with its own.
func TestDropRemovesItsNamespaceOnly(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	dir := t.TempDir()
	ns := namespaceFor(t, clusterAddrs, dir)
	fill := func(ns string) *Engine {
		t.Helper()
		e, err := Open(ctx, Options{Addrs: clusterAddrs, Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		batch := make([]engine.Update, 300) // on every master
		for i := range batch {
			batch[i] = engine.Update{Key: enginetest.K(uint64(i)), Fn: func([]byte) (engine.Mutation, error) {
				return engine.Mutation{Action: engine.Put, Value: []byte(ns), Terms: engine.Terms{DeleteAtHeight: 9}}, nil
			}}
		}
		if _, err := e.Update(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if err := e.PutMeta(ctx, "height", []byte("9")); err != nil {
			t.Fatal(err)
		}
		return e
	}
	others := []string{ns + "x", ns + ":sub"}
	for _, other := range others {
		t.Cleanup(func() { dropNamespace(t, clusterAddrs, other) })
	}
	for _, n := range append([]string{ns}, others...) {
		if err := fill(n).Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := countKeys(t, ns+":{*"); n < 300 {
		t.Fatalf("%d keys in the namespace before Drop", n)
	}

	if err := Drop(ctx, Options{Addrs: clusterAddrs, Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	if n := countKeys(t, ns+":{*"); n != 0 {
		t.Errorf("%d keys of the namespace left after Drop", n)
	}
	_, err := Open(ctx, Options{Addrs: clusterAddrs, Namespace: ns, ReadOnly: true})
	if none := new(NoNamespaceError); !errors.As(err, &none) {
		t.Errorf("read-only Open of the dropped namespace: %v, want a *NoNamespaceError", err)
	}
	for _, other := range others {
		e, err := Open(ctx, Options{Addrs: clusterAddrs, Namespace: other, ReadOnly: true})
		if err != nil {
			t.Fatalf("namespace %s after dropping %s: %v", other, ns, err)
		}
		values, err := e.Get(ctx, []engine.Key{enginetest.K(0), enginetest.K(299)})
		if err != nil || string(values[0]) != other || string(values[1]) != other {
			t.Errorf("namespace %s after dropping %s: %q, %v", other, ns, values, err)
		}
		e.Close()
	}
	if err := Drop(ctx, Options{Addrs: clusterAddrs, Namespace: ns}); err != nil {
		t.Errorf("Drop of a namespace that holds nothing: %v", err)
	}
	if err := Drop(ctx, Options{Addrs: clusterAddrs, Namespace: "a*"}); err == nil {
		t.Error("Drop of namespace a* accepted")
	}
}

// countKeys counts the keys matching pattern on every master.
func countKeys(t *testing.T, pattern string) int {
	t.Helper()
	ctx := context.Background()
	c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: clusterAddrs})
	defer c.Close()
	count := func(ctx context.Context, n *redis.Client) (int, error) {
		keys := 0
		iter := n.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			keys++
		}
		return keys, iter.Err()
	}
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		n, err := count(ctx, c.(*redis.Client))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	var mu sync.Mutex
	total := 0
	err := cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		k, err := count(ctx, n)
		mu.Lock()
		defer mu.Unlock()
		total += k
		return err
	})
	if err != nil {
		t.Fatalf("counting keys %s: %v", pattern, err)
	}
	return total
}
