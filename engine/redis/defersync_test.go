package redis

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
)

// waitCounter is a go-redis hook counting the WAIT commands a node is sent.
type waitCounter struct{ waits atomic.Int64 }

func (h *waitCounter) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *waitCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *waitCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if strings.EqualFold(c.Name(), "wait") {
				h.waits.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}

// With Wait = 1 under SyncAlways, writes whose context defers their sync
// send no WAIT; the next durable write first waits on every master, so that
// it covers them wherever they went, then on its own; the durable write
// after that waits on its own master only.
func TestDeferredWritesWaitOnceForAll(t *testing.T) {
	e := openAt(t, clusterAddrs, t.TempDir(), func(o *Options) { o.Wait = 1 })
	defer e.Close()
	ctx := context.Background()
	if e.cluster == nil {
		t.Skip("not a cluster")
	}
	var counters []*waitCounter
	var mu sync.Mutex
	err := e.cluster.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		h := &waitCounter{}
		c.AddHook(h)
		mu.Lock()
		defer mu.Unlock()
		counters = append(counters, h)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	waits := func() (n int64) {
		for _, h := range counters {
			n += h.waits.Load()
		}
		return n
	}
	keys := make([]engine.Update, 100) // over every master
	for i := range keys {
		keys[i] = engine.Update{Key: enginetest.K(uint64(i)), Fn: func([]byte) (engine.Mutation, error) {
			return engine.Mutation{Action: engine.Put, Value: []byte("deferred")}, nil
		}}
	}
	if _, err := e.Update(engine.DeferSync(ctx), keys); err != nil {
		t.Fatal(err)
	}
	if err := e.PutMeta(engine.DeferSync(ctx), "tip", []byte("deferred")); err != nil {
		t.Fatal(err)
	}
	if n := waits(); n != 0 {
		t.Fatalf("deferred writes sent %d WAITs, want none", n)
	}
	if err := e.PutMeta(ctx, "tip", []byte("durable")); err != nil {
		t.Fatal(err)
	}
	if n, want := waits(), int64(len(counters)+1); n != want {
		t.Fatalf("the durable write after deferred ones sent %d WAITs, want one per master (%d) and its own", n, len(counters))
	}
	if err := e.PutMeta(ctx, "tip", []byte("durable again")); err != nil {
		t.Fatal(err)
	}
	if n, want := waits(), int64(len(counters)+2); n != want {
		t.Fatalf("a durable write after a durable one sent %d WAITs, want its own only", n-int64(len(counters)+1))
	}
}
