package redis

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
// read and one to write, whatever the batch size; the servers themselves
// (MONITOR, counting only this test's keys, so that other test processes
// sharing the cluster do not count) confirm that no command is sent per
// key beyond one GET and one EVALSHA.
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
	var monitors []*monitor
	var mu sync.Mutex
	err := e.cluster.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		h := &pipelineCounter{}
		c.AddHook(h)
		m, err := startMonitor(c.Options().Addr)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		counters[c.Options().Addr] = h
		monitors = append(monitors, m)
		return nil
	})
	for _, m := range monitors {
		defer m.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
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
	served := map[string]int{}
	for _, m := range monitors {
		got, err := m.commandsOn(e.lay.ns + ":")
		if err != nil {
			t.Fatal(err)
		}
		for name, calls := range got {
			served[name] += calls
		}
	}
	want := map[string]int{"get": n, "evalsha": n}
	if !maps.Equal(served, want) {
		t.Errorf("servers ran %v on this test's keys, want %v", served, want)
	}
}

// monitor is a MONITOR connection to one server: it sees every command
// the server runs, in the order it runs them.
type monitor struct {
	conn net.Conn
	r    *bufio.Reader
	addr string
}

func startMonitor(addr string) (*monitor, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	m := &monitor{conn: conn, r: bufio.NewReader(conn), addr: addr}
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		conn.Close()
		return nil, err
	}
	if line, err := m.r.ReadString('\n'); err != nil || line != "+OK\r\n" {
		conn.Close()
		return nil, fmt.Errorf("MONITOR on %s: %q, %v", addr, line, err)
	}
	return m, nil
}

func (m *monitor) Close() error { return m.conn.Close() }

// commandsOn counts, by name, the commands clients sent since the monitor
// started that name a key beginning with prefix (commands a script runs
// are not counted: they are the script's own work). It sends the server
// an ECHO of a unique token and reads up to it, so every command the
// server ran before returning is counted.
func (m *monitor) commandsOn(prefix string) (map[string]int, error) {
	token := fmt.Sprintf("monitor-end-%d", time.Now().UnixNano())
	c := redis.NewClient(&redis.Options{Addr: m.addr})
	defer c.Close()
	if err := c.Echo(context.Background(), token).Err(); err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for {
		line, err := m.r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("MONITOR on %s: %v", m.addr, err)
		}
		// +<time> [<db> <client>] "<command>" "<arg>" ...
		_, rest, ok := strings.Cut(line, "] ")
		if !ok {
			return nil, fmt.Errorf("MONITOR on %s: unexpected line %q", m.addr, line)
		}
		if strings.Contains(line, " lua] ") {
			continue
		}
		if strings.Contains(rest, `"`+token+`"`) {
			return counts, nil
		}
		if strings.Contains(rest, ` "`+prefix) {
			name, _, _ := strings.Cut(strings.Trim(rest, "\"\r\n"), `"`)
			counts[strings.ToLower(name)]++
		}
	}
}
