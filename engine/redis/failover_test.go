package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
)

// TestFailover kills a master with SIGKILL under write load and lets the
// cluster promote its replica, once without WAIT and once with Wait = 1. It
// counts the acknowledged writes that are gone afterwards and the longest
// time the writers saw no acknowledgement, then starts the killed node again
// (it rejoins as a replica) so the cluster is whole for the next test.
// It needs the script's own local nodes; about 30 s; -short skips it.
func TestFailover(t *testing.T) {
	needCluster(t)
	if !managed {
		t.Skip("the cluster is not this machine's scripts/redis-cluster.sh cluster; will not kill its nodes")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	for _, wait := range []int{0, 1} {
		t.Run(fmt.Sprintf("Wait%d", wait), func(t *testing.T) { failover(t, wait) })
	}
}

type loadStats struct {
	mu       sync.Mutex
	acked    map[engine.Key]string
	failures int
	firstErr error
	lastAck  time.Time
	maxGap   time.Duration // longest time with no batch acknowledged
}

func (s *loadStats) ack(batch map[engine.Key]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if gap := now.Sub(s.lastAck); !s.lastAck.IsZero() && gap > s.maxGap {
		s.maxGap = gap
	}
	s.lastAck = now
	for k, v := range batch {
		s.acked[k] = v
	}
}

func (s *loadStats) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures++
	if s.firstErr == nil {
		s.firstErr = err
	}
}

func failover(t *testing.T, wait int) {
	waitForReplicas(t)
	e := openAt(t, clusterAddrs, t.TempDir(), func(o *Options) {
		o.Wait = wait
		o.RetryTimeout = 10 * time.Second
	})
	defer e.Close()
	ctx := context.Background()

	stats := &loadStats{acked: map[engine.Key]string{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	const writers, batchSize = 4, 20
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for n := uint64(0); ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				batch := make([]engine.Update, batchSize)
				values := make(map[engine.Key]string, batchSize)
				for i := range batch {
					k := enginetest.K(uint64(w)<<40 | n*batchSize + uint64(i))
					v := fmt.Sprintf("w%d-n%d-i%d", w, n, i)
					values[k] = v
					batch[i] = engine.Update{Key: k, Fn: func([]byte) (engine.Mutation, error) {
						return engine.Mutation{Action: engine.Put, Value: []byte(v)}, nil
					}}
				}
				if _, err := e.Update(ctx, batch); err != nil {
					stats.fail(err)
					continue
				}
				stats.ack(values)
			}
		}(w)
	}

	time.Sleep(time.Second)
	victim, pid := pickMaster(t, e)
	killedAt := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGKILL master %s (pid %d) under load", victim, pid)
	// Without WAIT the writers carry on once the replica is promoted. With
	// WAIT 1 the promoted replica has no replica of its own, so its writes
	// fail until the old master rejoins: start it once the failover is done.
	waitPromoted(t, victim)
	promotedAfter := time.Since(killedAt)
	if wait > 0 {
		time.Sleep(time.Second)
		restart(t)
	}
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()

	var lost int
	keys := make([]engine.Key, 0, len(stats.acked))
	for k := range stats.acked {
		keys = append(keys, k)
	}
	got, err := e.Get(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if string(got[i]) != stats.acked[k] {
			lost++
		}
	}
	t.Logf("Wait=%d: %d acknowledged records, %d lost; %d batches failed (first: %v); replica promoted %.1fs after the kill; longest pause without an acknowledged batch %.1fs",
		wait, len(stats.acked), lost, stats.failures, stats.firstErr, promotedAfter.Seconds(), stats.maxGap.Seconds())
	if wait > 0 && lost > 0 {
		t.Errorf("with WAIT %d, %d acknowledged writes were lost", wait, lost)
	}
	if wait == 0 && stats.failures > 0 {
		t.Errorf("without WAIT the client should ride out the failover, but %d batches failed: %v", stats.failures, stats.firstErr)
	}
	if wait == 0 {
		restart(t)
	}
}

// pickMaster returns the address and process id of a master other than the
// one holding the namespace's metadata.
func pickMaster(t *testing.T, e *Engine) (string, int) {
	ctx := context.Background()
	meta, err := e.masterFor(ctx, e.lay.meta())
	if err != nil {
		t.Fatal(err)
	}
	var addr string
	var pid int
	var mu sync.Mutex
	err = e.cluster.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		if c.Options().Addr == meta.Options().Addr {
			return nil
		}
		info, err := c.Info(ctx, "server").Result()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if addr == "" {
			addr, pid = c.Options().Addr, infoInt(info, "process_id")
		}
		return nil
	})
	if err != nil || pid == 0 {
		t.Fatalf("no master to kill: %v", err)
	}
	return addr, pid
}

func infoInt(info, field string) int {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// waitPromoted waits until a surviving node reports the cluster ok with the
// victim marked failed.
func waitPromoted(t *testing.T, victim string) {
	deadline := time.Now().Add(30 * time.Second)
	for _, a := range clusterAddrs {
		if a == victim {
			continue
		}
		c := redis.NewClient(&redis.Options{Addr: a})
		defer c.Close()
		for {
			nodes, _ := c.ClusterNodes(context.Background()).Result()
			info, _ := c.ClusterInfo(context.Background()).Result()
			if strings.Contains(info, "cluster_state:ok") && strings.Contains(nodes, victim) && strings.Contains(nodes, "master,fail") {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no failover 30 s after killing %s", victim)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// restart starts the killed node again and waits until every master has a
// replica in sync, as the next test expects.
func restart(t *testing.T) {
	if _, err := runScript("start"); err != nil {
		t.Fatal(err)
	}
	waitForReplicas(t)
}

func waitForReplicas(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: clusterAddrs})
	defer c.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		c.ReloadState(ctx)
		ok := true
		err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			info, err := m.Info(ctx, "replication").Result()
			if err != nil {
				return err
			}
			if infoInt(info, "connected_slaves") < 1 || !strings.Contains(info, "state=online") {
				ok = false
			}
			return nil
		})
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("masters without an online replica after 60 s (%v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
