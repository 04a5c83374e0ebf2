package redis

import (
	"context"
	"encoding/binary"
	"flag"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/utxostore/utxostore/engine"
)

var (
	benchLive  = flag.Int("live", envInt("UTXOSTORE_BENCH_LIVE", 50_000), "live records loaded before BenchmarkCreateSpendMix measures (env UTXOSTORE_BENCH_LIVE)")
	benchBatch = flag.Int("batch", 64, "updates per Update call in BenchmarkCreateSpendMix")
	benchWait  = flag.Int("wait", 0, "replicas every write batch of BenchmarkCreateSpendMix waits for")
)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// The workload is the other engines' BenchmarkCreateSpendMix: records shaped
// like UTXO records (a 60..140-byte header and 1..5 32-byte outputs, so
// 100..300 bytes), 22% creates and 78% spends of a random live record's next
// output (appending 36 bytes of spending data), a block every 1,000
// operations that prunes the records whose delete-at-height has come, and a
// checkpoint.
const (
	benchOutput    = 32
	benchSpend     = 36
	benchBlockOps  = 1000
	benchRetention = 10
	benchCreates   = 22
)

func benchRecord(rng *rand.Rand, height uint32) ([]byte, engine.Terms) {
	outputs := 1 + rng.IntN(5)
	v := make([]byte, 2+60+rng.IntN(80)+outputs*benchOutput)
	v[0] = byte(outputs) // outputs; v[1] counts the spent ones
	for i := 2; i < len(v); i++ {
		v[i] = byte(rng.Uint32())
	}
	return v, engine.Terms{ProducedAt: height}
}

func benchSpendFn(height uint32) engine.UpdateFunc {
	return func(cur []byte) (engine.Mutation, error) {
		if cur == nil || cur[1] >= cur[0] {
			return engine.Mutation{Action: engine.Keep}, nil
		}
		next := append(cur, make([]byte, benchSpend)...)
		binary.LittleEndian.PutUint32(next[len(next)-4:], uint32(cur[1]))
		next[1]++
		terms := engine.Terms{ProducedAt: height}
		if next[1] == next[0] {
			terms.DeleteAtHeight, terms.Consumed = height+benchRetention, true
		}
		return engine.Mutation{Action: engine.Put, Value: next, Terms: terms}, nil
	}
}

func benchPut(v []byte, terms engine.Terms) engine.UpdateFunc {
	return func([]byte) (engine.Mutation, error) {
		return engine.Mutation{Action: engine.Put, Value: v, Terms: terms}, nil
	}
}

func benchKey(i uint32) engine.Key {
	var k engine.Key
	binary.BigEndian.PutUint64(k[:8], uint64(i)*0x9E3779B97F4A7C15)
	binary.BigEndian.PutUint32(k[28:], i)
	return k
}

// BenchmarkCreateSpendMix runs on the cluster of UTXOSTORE_REDIS_ADDRS (or
// the script's). To compare one master with three, start the variants with
// the script and point the benchmark at each:
//
//	MASTERS=1 REPLICAS=0 REDIS_CLUSTER_BASE_PORT=7200 REDIS_CLUSTER_DIR=/tmp/utxo-redis-1m scripts/redis-cluster.sh start
//	UTXOSTORE_REDIS_ADDRS=127.0.0.1:7200 go test -run '^$' -bench CreateSpendMix -benchtime 100000x ./engine/redis
func BenchmarkCreateSpendMix(b *testing.B) {
	e := openAt(b, clusterAddrs, b.TempDir(), func(o *Options) { o.Wait = *benchWait })
	defer e.Close()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))

	var live []uint32
	var unspent []uint8
	for next := uint32(0); int(next) < *benchLive; {
		batch := make([]engine.Update, 0, 1000)
		for ; len(batch) < cap(batch) && int(next) < *benchLive; next++ {
			v, terms := benchRecord(rng, 1)
			batch = append(batch, engine.Update{Key: benchKey(next), Fn: benchPut(v, terms)})
			live = append(live, next)
			unspent = append(unspent, v[0])
		}
		benchApply(b, e, batch)
	}

	height := uint32(2)
	nextKey := uint32(len(live))
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; {
		n := min(*benchBatch, b.N-done)
		batch := make([]engine.Update, 0, n)
		for len(batch) < n {
			if rng.IntN(100) < benchCreates || len(live) == 0 {
				v, terms := benchRecord(rng, height)
				batch = append(batch, engine.Update{Key: benchKey(nextKey), Fn: benchPut(v, terms)})
				live = append(live, nextKey)
				unspent = append(unspent, v[0])
				nextKey++
				continue
			}
			p := rng.IntN(len(live))
			i := live[p]
			if unspent[i]--; unspent[i] == 0 {
				live[p] = live[len(live)-1]
				live = live[:len(live)-1]
			}
			batch = append(batch, engine.Update{Key: benchKey(i), Fn: benchSpendFn(height)})
		}
		benchApply(b, e, batch)
		done += n
		if done/benchBlockOps != (done-n)/benchBlockOps {
			height++
			benchPrune(b, e, height)
			if err := e.Checkpoint(ctx, height); err != nil {
				b.Fatal(err)
			}
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(float64(len(live)), "live")
}

func benchApply(b *testing.B, e engine.Engine, batch []engine.Update) {
	errs, err := e.Update(context.Background(), batch)
	if err != nil {
		b.Fatal(err)
	}
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

func benchPrune(b *testing.B, e engine.Engine, height uint32) {
	var keys []engine.Key
	err := e.Scan(context.Background(), engine.ByDeleteAtHeight, 1, height, func(k engine.Key, _ uint32) error {
		keys = append(keys, k)
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := e.Delete(context.Background(), keys); err != nil {
		b.Fatal(err)
	}
}
