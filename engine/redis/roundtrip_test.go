package redis

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
)

// pipelineCounter is a go-redis hook counting, per node, the pipelines
// (round trips) and the commands in them.
type pipelineCounter struct{ pipes, cmds atomic.Int64 }

func (h *pipelineCounter) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *pipelineCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *pipelineCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.pipes.Add(1)
		h.cmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// An Update of 1,000 keys over every shard is one round trip per master to
// read and one to write, whatever the batch size; the servers' own command
// statistics confirm that no command is sent per key beyond one GET and one
// EVALSHA.
func TestBatchIsOneRoundTripPerShard(t *testing.T) {
	e := openAt(t, clusterAddrs, t.TempDir(), nil)
	defer e.Close()
	ctx := context.Background()
	if e.cluster == nil {
		t.Skip("not a cluster")
	}
	// Warm the connection pools first: a new connection's handshake (HELLO,
	// CLIENT SETINFO) is a pipeline of its own.
	if _, err := e.Update(ctx, []engine.Update{{Key: enginetest.K(1 << 40), Fn: func([]byte) (engine.Mutation, error) {
		return engine.Mutation{Action: engine.Put, Value: []byte("warm")}, nil
	}}}); err != nil {
		t.Fatal(err)
	}
	warm := make([]engine.Key, 100) // over every master
	for i := range warm {
		warm[i] = enginetest.K(uint64(i))
	}
	if _, err := e.Get(ctx, warm); err != nil {
		t.Fatal(err)
	}
	counters := map[string]*pipelineCounter{}
	var mu sync.Mutex
	err := e.cluster.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		h := &pipelineCounter{}
		c.AddHook(h)
		mu.Lock()
		counters[c.Options().Addr] = h
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	before := commandStats(t, e)
	const n = 1000
	batch := make([]engine.Update, n)
	for i := range batch {
		v := []byte("value-" + strconv.Itoa(i))
		batch[i] = engine.Update{Key: enginetest.K(uint64(i)), Fn: func([]byte) (engine.Mutation, error) {
			return engine.Mutation{Action: engine.Put, Value: v, Terms: engine.Terms{DeleteAtHeight: 5}}, nil
		}}
	}
	errs, err := e.Update(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	after := commandStats(t, e)
	var cmds int64
	for addr, h := range counters {
		t.Logf("master %s: %d round trips, %d commands", addr, h.pipes.Load(), h.cmds.Load())
		if h.pipes.Load() != 2 {
			t.Errorf("master %s: %d round trips for one batch, want 2 (read, write)", addr, h.pipes.Load())
		}
		cmds += h.cmds.Load()
	}
	if cmds != 2*n {
		t.Errorf("%d commands for %d keys, want %d", cmds, n, 2*n)
	}
	for _, c := range []string{"get", "evalsha"} {
		if d := after[c] - before[c]; d != n {
			t.Errorf("servers counted %d %s calls, want %d", d, c, n)
		}
	}
}

// commandStats sums INFO commandstats calls over the masters.
func commandStats(t *testing.T, e *Engine) map[string]int64 {
	t.Helper()
	var mu sync.Mutex
	out := map[string]int64{}
	err := e.cluster.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, line := range strings.Split(info, "\n") {
			name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
			if !ok {
				continue
			}
			calls, _, _ := strings.Cut(rest, ",")
			n, _ := strconv.ParseInt(calls, 10, 64)
			out[name] += n
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
