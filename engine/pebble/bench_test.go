package pebble_test

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
	"github.com/utxostore/utxostore/engine/pebble"
)

var (
	benchLive  = flag.Int("live", envInt("UTXOSTORE_BENCH_LIVE", 200_000), "live records loaded before BenchmarkCreateSpendMix measures (env UTXOSTORE_BENCH_LIVE)")
	benchBatch = flag.Int("batch", 64, "updates per Update call in BenchmarkCreateSpendMix")
	benchSync  = flag.String("sync", "always", "sync mode of BenchmarkCreateSpendMix: always or block")
	benchDir   = flag.String("benchdir", "", "directory for BenchmarkCreateSpendMix's store (default: a temporary one)")
)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// A benchmark record is shaped like a UTXO record: a header of transaction
// metadata followed by one 32-byte hash per unspent output; spending an
// output appends its 36 bytes of spending data (txid and input index), so
// a spend changes 36..68 bytes. Values are 100..300 bytes.
const (
	outputSize  = 32
	spendSize   = 36
	blockOps    = 1000 // ops per simulated block
	retention   = 10   // blocks a fully spent record waits before pruning
	createShare = 22   // percent of ops that create: about one create per 3.5 spends keeps the live count steady
)

func newRecord(rng *rand.Rand, height uint32) ([]byte, engine.Terms) {
	header := 60 + rng.IntN(80)
	outputs := 1 + rng.IntN(5)
	v := make([]byte, 2+header+outputs*outputSize)
	v[0], v[1] = byte(outputs), 0 // outputs, spent so far
	for i := 2; i < len(v); i++ {
		v[i] = byte(rng.Uint32())
	}
	return v, engine.Terms{ProducedAt: height}
}

// spend spends the next unspent output; a record whose last output is spent
// becomes deletable after the retention, as the UTXO store's DAH does.
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

// BenchmarkCreateSpendMix loads -live records, then measures b.N random
// creates and spends in batches of -batch, pruning fully spent records at
// each simulated block. Run the 10-million-record case by hand:
//
//	go test -run '^$' -bench CreateSpendMix -benchtime 1000000x ./engine/pebble -live 10000000
//
// Use -benchtime Nx: the load is not timed but still takes minutes at
// that size, so the framework's first b.N=1 probe returns at once instead
// of loading a store for one op.
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

	// Load under SyncBlock, then reopen with the measured mode.
	loadStart := time.Now()
	e, err := pebble.Open(dir, pebble.Options{Sync: engine.SyncBlock, Logf: b.Logf})
	if err != nil {
		b.Fatal(err)
	}
	// The benchmark's own bookkeeping: the records with unspent outputs,
	// and each record's count of them (one byte per record ever created).
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
	if e, err = pebble.Open(dir, pebble.Options{Sync: mode, Logf: b.Logf}); err != nil {
		b.Fatal(err)
	}
	defer e.Close()

	height := uint32(2)
	nextKey := uint32(len(live))
	var logical int64
	ioBefore := procWriteBytes(b)
	b.Logf("loaded %d records in %v", loaded, time.Since(loadStart).Round(time.Second))
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
			if err := e.Checkpoint(ctx, height); err != nil {
				b.Fatal(err)
			}
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	ioAfter := procWriteBytes(b)

	m := e.Metrics()
	avgValue := float64(valueBytes) / float64(loaded)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(float64(m.DiskSpaceUsage())/float64(len(live))/avgValue, "disk/value")
	b.ReportMetric(float64(m.DiskSpaceUsage())/float64(len(live)), "disk-B/live")
	if logical > 0 {
		b.ReportMetric(float64(ioAfter-ioBefore)/float64(logical), "write-amp")
	}
	total := m.Total()
	b.ReportMetric(total.WriteAmp(), "lsm-write-amp")
	b.ReportMetric(float64(peakRSS())/(1<<20), "peak-RSS-MB")
	b.ReportMetric(float64(len(live)), "live")
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

// prune deletes the records whose delete-at-height has come, as the
// store's pruner does at each block.
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

// procWriteBytes is the bytes this process has caused to be written to the
// storage device (Linux /proc/self/io write_bytes).
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

// peakRSS is the process's peak resident set in bytes.
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss << 10 // kilobytes on Linux
}
