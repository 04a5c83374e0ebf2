package redis

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
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
// (round trips) and the commands in them, until it is turned off (a hook
// cannot be removed from a client).
type pipelineCounter struct {
	pipes, cmds atomic.Int64
	off         atomic.Bool
}

func (h *pipelineCounter) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *pipelineCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *pipelineCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !h.off.Load() {
			h.pipes.Add(1)
			h.cmds.Add(int64(len(cmds)))
		}
		return next(ctx, cmds)
	}
}

// An Update of 1,000 keys over every shard costs one round trip per master
// to read and one to write, whatever the batch size, or only the one to
// write where nothing needs reading: records the batch creates, and
// records this engine wrote last (recent). Records another engine changed
// since this one wrote them cost a second CAS, whose first try returned
// them as they are. The servers themselves (MONITOR, counting only this
// test's keys, so that other test processes sharing the cluster do not
// count) confirm that no command is sent per key beyond these.
func TestBatchIsOneRoundTripPerShard(t *testing.T) {
	dir := t.TempDir()
	e := openAt(t, clusterAddrs, dir, nil)
	defer e.Close()
	if e.cluster == nil {
		t.Skip("not a cluster")
	}
	other := openAt(t, clusterAddrs, dir, nil) // another process on the namespace
	defer other.Close()
	const n = 1000
	keys := make([]engine.Key, n)
	for i := range keys {
		keys[i] = enginetest.K(uint64(i))
	}
	putAll := func(value string) []engine.Update {
		batch := make([]engine.Update, n)
		for i, k := range keys {
			v := []byte(value + "-" + strconv.Itoa(i))
			batch[i] = engine.Update{Key: k, Fn: func([]byte) (engine.Mutation, error) {
				return engine.Mutation{Action: engine.Put, Value: v, Terms: engine.Terms{DeleteAtHeight: 5}}, nil
			}}
		}
		return batch
	}
	appendAll := func(suffix string) []engine.Update {
		batch := make([]engine.Update, n)
		for i, k := range keys {
			batch[i] = engine.Update{Key: k, Fn: func(cur []byte) (engine.Mutation, error) {
				if cur == nil {
					return engine.Mutation{}, fmt.Errorf("record %d is missing", i)
				}
				return engine.Mutation{Action: engine.Put, Value: append(slices.Clone(cur), suffix...)}, nil
			}}
		}
		return batch
	}
	for _, step := range []struct {
		name       string
		eng        *Engine
		batch      []engine.Update
		roundTrips int
		served     map[string]int
		wantEnd    string // record 7's value after the step
	}{
		{"create", e, putAll("v"), 1, map[string]int{"evalsha": n}, "v-7"},
		{"update of records another engine wrote", other, appendAll("+o"), 2, map[string]int{"get": n, "evalsha": n}, "v-7+o"},
		{"update of records the same engine wrote", other, appendAll("+p"), 1, map[string]int{"evalsha": n}, "v-7+o+p"},
		{"update of records another engine changed since", e, appendAll("+q"), 2, map[string]int{"evalsha": 2 * n}, "v-7+o+p+q"},
	} {
		countBatch(t, step.eng, step.name, step.batch, step.roundTrips, step.served)
		got, err := e.Get(context.Background(), keys[7:8])
		if err != nil || string(got[0]) != step.wantEnd {
			t.Fatalf("%s: record 7 = %q, %v; want %q", step.name, got[0], err, step.wantEnd)
		}
	}
}

// countBatch runs one Update of batch on e and checks that it took
// roundTrips pipelines on every master, and that the masters ran served
// (commands by name) on the namespace's keys.
func countBatch(t *testing.T, e *Engine, name string, batch []engine.Update, roundTrips int, served map[string]int) {
	t.Helper()
	ctx := context.Background()
	// Warm the connection pools first: a new connection's handshake (HELLO,
	// CLIENT SETINFO) is a pipeline of its own.
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
	defer func() {
		for _, m := range monitors {
			m.Close()
		}
		for _, h := range counters {
			h.off.Store(true)
		}
	}()
	if err != nil {
		t.Fatal(err)
	}
	errs, err := e.Update(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var cmds int64
	for addr, h := range counters {
		t.Logf("%s: master %s: %d round trips, %d commands", name, addr, h.pipes.Load(), h.cmds.Load())
		if h.pipes.Load() != int64(roundTrips) {
			t.Errorf("%s: master %s: %d round trips for one batch, want %d", name, addr, h.pipes.Load(), roundTrips)
		}
		cmds += h.cmds.Load()
	}
	want := 0
	for _, calls := range served {
		want += calls
	}
	if cmds != int64(want) {
		t.Errorf("%s: %d commands for %d keys, want %d", name, cmds, len(batch), want)
	}
	got := map[string]int{}
	for _, m := range monitors {
		counts, err := m.commandsOn(e.lay.ns + ":")
		if err != nil {
			t.Fatal(err)
		}
		for name, calls := range counts {
			got[name] += calls
		}
	}
	if !maps.Equal(got, served) {
		t.Errorf("%s: servers ran %v on this test's keys, want %v", name, got, served)
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
