package sozu

import (
	"context"
	"encoding/binary"
	"flag"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/utxostore/utxostore/engine"
)

// The flags and the workload match engine/pebble's benchmark, so one
// command line runs both:
//
//	UTXOSTORE_BENCH_LIVE=200000 go test -run '^$' -bench CreateSpendMix -benchtime 200000x ./engine/sozu ./engine/pebble
var (
	benchLive  = flag.Int("live", envInt("UTXOSTORE_BENCH_LIVE", 200_000), "live records loaded before BenchmarkCreateSpendMix measures (env UTXOSTORE_BENCH_LIVE)")
	benchBatch = flag.Int("batch", 64, "updates per Update call in BenchmarkCreateSpendMix")
	benchSync  = flag.String("sync", "always", "sync mode of BenchmarkCreateSpendMix: always or block")
	benchDir   = flag.String("benchdir", "", "directory for the benchmark's store (default: a temporary one)")
)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// A benchmark record is shaped like a UTXO record: a header followed by one
// 32-byte hash per unspent output (100..300 bytes); a spend appends 36
// bytes of spending data.
const (
	outputSize  = 32
	spendSize   = 36
	blockOps    = 1000
	retention   = 10
	createShare = 22
)

func newRecord(rng *rand.Rand, height uint32) ([]byte, engine.Terms) {
	header := 60 + rng.IntN(80)
	outputs := 1 + rng.IntN(5)
	v := make([]byte, 2+header+outputs*outputSize)
	v[0], v[1] = byte(outputs), 0
	for i := 2; i < len(v); i++ {
		v[i] = byte(rng.Uint32())
	}
	return v, engine.Terms{ProducedAt: height}
}

func spend(height uint32) engine.UpdateFunc {
	return func(cur []byte) (engine.Mutation, error) {
		if cur == nil || cur[1] >= cur[0] {
			return engine.Mutation{Action: engine.Keep}, nil
		}
		next := append(cur, make([]byte, spendSize)...)
		binary.LittleEndian.PutUint32(next[len(next)-4:], uint32(cur[1]))
		next[1]++
		terms := engine.Terms{ProducedAt: height}
		if next[1] == next[0] {
			terms.DeleteAtHeight, terms.Consumed = height+retention, true
		}
		return engine.Mutation{Action: engine.Put, Value: next, Terms: terms}, nil
	}
}

func benchKey(i uint32) engine.Key {
	var k engine.Key
	binary.BigEndian.PutUint64(k[:8], uint64(i)*0x9E3779B97F4A7C15)
	binary.BigEndian.PutUint32(k[28:], i)
	return k
}

func putFn(v []byte, terms engine.Terms) engine.UpdateFunc {
	return func([]byte) (engine.Mutation, error) {
		return engine.Mutation{Action: engine.Put, Value: v, Terms: terms}, nil
	}
}

func mustApply(b *testing.B, e engine.Engine, batch []engine.Update) {
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

// BenchmarkCreateSpendMix loads -live records, then measures b.N random
// creates and spends in batches of -batch; at each simulated block of 1000
// ops it deletes the records whose DAH came (as the store's pruner does),
// tells the engine the height and checkpoints. The 10-million run is
// manual:
//
//	go test -run '^$' -bench CreateSpendMix -benchtime 1000000x ./engine/sozu -live 10000000
func BenchmarkCreateSpendMix(b *testing.B) {
	if b.N == 1 {
		return
	}
	mode, err := engine.ParseSyncMode(*benchSync)
	if err != nil {
		b.Fatal(err)
	}
	dir := *benchDir
	if dir == "" {
		dir = b.TempDir()
	}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	loadStart := time.Now()
	e, err := Open(dir, benchOptions(b, engine.SyncBlock))
	if err != nil {
		b.Fatal(err)
	}
	var live []uint32
	var unspent []uint8
	var valueBytes, loaded int64
	for next := uint32(0); int(next) < *benchLive; {
		batch := make([]engine.Update, 0, 10_000)
		for ; len(batch) < cap(batch) && int(next) < *benchLive; next++ {
			v, terms := newRecord(rng, 1)
			valueBytes += int64(len(v))
			batch = append(batch, engine.Update{Key: benchKey(next), Fn: putFn(v, terms)})
			live = append(live, next)
			unspent = append(unspent, v[0])
		}
		mustApply(b, e, batch)
	}
	loaded = int64(len(live))
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	if e, err = Open(dir, benchOptions(b, mode)); err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	b.Logf("loaded %d records in %v", loaded, time.Since(loadStart).Round(time.Second))

	height := uint32(2)
	nextKey := uint32(len(live))
	var logical int64
	var checkpoints int
	var checkpointTime time.Duration
	ioBefore := procWriteBytes(b)
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; {
		n := min(*benchBatch, b.N-done)
		batch := make([]engine.Update, 0, n)
		for len(batch) < n {
			if rng.IntN(100) < createShare || len(live) == 0 {
				v, terms := newRecord(rng, height)
				logical += int64(len(v)) + engine.KeySize
				batch = append(batch, engine.Update{Key: benchKey(nextKey), Fn: putFn(v, terms)})
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
			logical += spendSize + engine.KeySize
			batch = append(batch, engine.Update{Key: benchKey(i), Fn: spend(height)})
		}
		mustApply(b, e, batch)
		done += n
		if done/blockOps != (done-n)/blockOps {
			height++
			prune(b, e, height)
			if err := e.SetHeight(ctx, height); err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			if err := e.Checkpoint(ctx, height); err != nil {
				b.Fatal(err)
			}
			checkpointTime += time.Since(t0)
			checkpoints++
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	ioAfter := procWriteBytes(b)
	st, err := e.Stats(ctx)
	if err != nil {
		b.Fatal(err)
	}
	avgValue := float64(valueBytes) / float64(loaded)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(float64(st.DiskBytes)/float64(len(live))/avgValue, "disk/value")
	b.ReportMetric(float64(st.DiskBytes)/float64(len(live)), "disk-B/live")
	if logical > 0 {
		b.ReportMetric(float64(ioAfter-ioBefore)/float64(logical), "write-amp")
	}
	if checkpoints > 0 {
		b.ReportMetric(float64(checkpointTime.Microseconds())/1000/float64(checkpoints), "ckpt-ms")
	}
	b.ReportMetric(float64(peakRSS())/(1<<20), "peak-RSS-MB")
	b.ReportMetric(float64(len(live)), "live")
	b.ReportMetric(st.FilterFalsePositiveRate, "filter-fpr")
	b.Logf("layers %+v; disk %d (pages %d, vlog %d, wal %d, ckpt %d); descent %v", st.Layers, st.DiskBytes, st.PageFileBytes, st.ValueLogBytes, st.WALBytes, st.CheckpointBytes, st.Descent)
}

func prune(b *testing.B, e engine.Engine, height uint32) {
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

// BenchmarkBatchedReadOldVsFresh loads records over many heights, then
// reads batches of 1000 of the oldest and of the freshest: fresh ones sit
// in layer 0 (memory), old ones deep, which is the Lindy bet the table makes.
func BenchmarkBatchedReadOldVsFresh(b *testing.B) {
	n := min(*benchLive, 200_000)
	e, err := Open(b.TempDir(), benchOptions(b, engine.SyncBlock))
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	for next := 0; next < n; {
		batch := make([]engine.Update, 0, 5000)
		for ; len(batch) < cap(batch) && next < n; next++ {
			v, terms := newRecord(rng, uint32(1+next/1000))
			batch = append(batch, engine.Update{Key: benchKey(uint32(next)), Fn: putFn(v, terms)})
		}
		mustApply(b, e, batch)
	}
	if err := e.Checkpoint(context.Background(), 0); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		from int
	}{{"old", 0}, {"fresh", n - 1000}} {
		keys := make([]engine.Key, 1000)
		for i := range keys {
			keys[i] = benchKey(uint32(c.from + i))
		}
		b.Run(c.name, func(b *testing.B) {
			before, _ := e.Stats(context.Background())
			for b.Loop() {
				if _, err := e.Get(context.Background(), keys); err != nil {
					b.Fatal(err)
				}
			}
			after, _ := e.Stats(context.Background())
			b.ReportMetric(float64(b.N*len(keys))/b.Elapsed().Seconds(), "keys/s")
			b.ReportMetric(float64(after.BucketVisits-before.BucketVisits)/float64(b.N*len(keys)), "buckets/key")
			b.ReportMetric(float64(after.PageReads-before.PageReads)/float64(b.N*len(keys)), "pages/key")
		})
	}
}

func procWriteBytes(b *testing.B) int64 {
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Skipf("no /proc/self/io: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss << 10
}
