package sozu

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
)

// BenchmarkCreateSpendMix runs enginetest's create/spend workload, the one
// engine/pebble's benchmark runs, so one command line runs both:
//
//	UTXOSTORE_BENCH_LIVE=200000 go test -run '^$' -bench CreateSpendMix -benchtime 200000x ./engine/sozu ./engine/pebble
//
// Flags -live, -batch, -sync, -benchdir, -ages and -young are
// enginetest's; Sozu's options come from SOZU_BENCH_OPTS
// (bench_options_test.go). Each block also tells
// the engine its height, and the checkpoints are timed (ckpt-ms on
// average, ckpt-max-ms the slowest: a page checkpoint). The
// 10-million run is manual:
//
//	go test -run '^$' -bench CreateSpendMix -benchtime 1000000x ./engine/sozu -live 10000000
func BenchmarkCreateSpendMix(b *testing.B) {
	ctx := context.Background()
	var checkpoints int
	var checkpointTime, slowest time.Duration
	enginetest.BenchCreateSpendMix(b, enginetest.BenchHarness[*Engine]{
		Open: func(b *testing.B, dir string, mode engine.SyncMode) *Engine {
			e, err := Open(dir, benchOptions(b, mode))
			if err != nil {
				b.Fatal(err)
			}
			return e
		},
		Live:  200_000,
		Local: true,
		Flags: flags,
		Block: func(b *testing.B, e *Engine, height uint32) {
			if err := e.SetHeight(ctx, height); err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			if err := e.Checkpoint(ctx, height); err != nil {
				b.Fatal(err)
			}
			took := time.Since(t0)
			checkpointTime += took
			slowest = max(slowest, took)
			checkpoints++
		},
		DiskBytes: func(b *testing.B, e *Engine) int64 {
			return benchStats(b, e).DiskBytes
		},
		Report: func(b *testing.B, e *Engine) {
			if checkpoints > 0 {
				b.ReportMetric(float64(checkpointTime.Microseconds())/1000/float64(checkpoints), "ckpt-ms")
				b.ReportMetric(float64(slowest.Microseconds())/1000, "ckpt-max-ms")
			}
			st := benchStats(b, e)
			// The engine was reopened before the timed phase, so what it
			// wrote since is the mix's: the shares of the write-amp, as
			// issued (device-B/op is what reached the device).
			b.ReportMetric(float64(st.PageWrites)*PageSize/float64(b.N), "page-B/op")
			b.ReportMetric(float64(st.LogBytesWritten)/float64(b.N), "log-B/op")
			b.ReportMetric(float64(st.CheckpointBytesWritten)/float64(b.N), "ckpt-B/op")
			// The share of the timed phase spent waiting for the log's
			// fsyncs (on one goroutine at a time).
			b.ReportMetric(st.LogSyncTime.Seconds()/b.Elapsed().Seconds(), "fsync-share")
			b.ReportMetric(st.FilterFalsePositiveRate, "filter-fpr")
			b.Logf("layers %+v; disk %d (pages %d, of which in use %d, vlog %d, log file %d holding %d of records, ckpt %d); buffered changes %d buckets, %d bytes; summaries %d bytes; descent %v",
				st.Layers, st.DiskBytes, st.PageFileBytes, st.LivePages*PageSize, st.ValueLogBytes, st.LogFileBytes, st.WALBytes, st.CheckpointBytes, st.BufferedBuckets, st.BufferedMemory, st.SummaryBytes, st.Descent)
		},
	})
}

func benchStats(b *testing.B, e *Engine) Stats {
	st, err := e.Stats(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// BenchmarkBatchedReadOldVsFresh loads records over many heights, then
// reads batches of 1000 of the oldest and of the freshest: fresh ones sit
// in layer 0 (memory), old ones deep, which is the Lindy bet the table makes.
func BenchmarkBatchedReadOldVsFresh(b *testing.B) {
	n := min(flags.BenchLive(200_000), 200_000)
	e, err := Open(b.TempDir(), benchOptions(b, engine.SyncBlock))
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	enginetest.BenchLoad(b, e, rand.New(rand.NewPCG(3, 4)), n, 5000, func(i uint32) uint32 { return 1 + i/1000 })
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

// benchKey and putFn serve checkpoint_cost_test.go.
func benchKey(i uint32) engine.Key { return enginetest.BenchKey(i) }

func putFn(v []byte, terms engine.Terms) engine.UpdateFunc {
	return func([]byte) (engine.Mutation, error) {
		return engine.Mutation{Action: engine.Put, Value: v, Terms: terms}, nil
	}
}

// BenchmarkReplay measures what Options.CheckpointLogBytes bounds: the
// time Open takes to replay a log after a crash. It writes -live records
// with no page checkpoint ("creates"; "spends" then rewrites 36 bytes of
// each record twice, as spends do, which the log holds as patch records),
// makes the log durable at a block boundary, abandons the engine as a
// killed process would and times the reopen:
//
//	UTXOSTORE_BENCH_LIVE=1000000 go test -run '^$' -bench Replay -benchtime 1x ./engine/sozu
func BenchmarkReplay(b *testing.B) {
	n := flags.BenchLive(200_000)
	for _, spends := range []int{0, 2} {
		name := "creates"
		if spends > 0 {
			name = "spends"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				dir := b.TempDir()
				o := benchOptions(b, engine.SyncBlock)
				o.CheckpointLogBytes = 1 << 40 // never a page checkpoint: all of it stays in the log
				e, err := Open(dir, o)
				if err != nil {
					b.Fatal(err)
				}
				enginetest.BenchLoad(b, e, rand.New(rand.NewPCG(5, 6)), n, 5000, func(uint32) uint32 { return 1 })
				for round := range spends {
					for next := 0; next < n; next += 5000 {
						batch := make([]engine.Update, 0, 5000)
						for i := next; i < min(next+5000, n); i++ {
							batch = append(batch, engine.Update{Key: benchKey(uint32(i)), Fn: spendBytes(round)})
						}
						if _, err := e.Update(context.Background(), batch); err != nil {
							b.Fatal(err)
						}
					}
				}
				if err := e.Checkpoint(context.Background(), 1); err != nil {
					b.Fatal(err)
				}
				logBytes := benchStats(b, e).WALBytes
				e.abandon()
				b.StartTimer()
				start := time.Now()
				e, err = Open(dir, o)
				if err != nil {
					b.Fatal(err)
				}
				took := time.Since(start)
				b.StopTimer()
				rep := benchStats(b, e).Recovery
				if rep.ReplayedRecords < n*(1+spends) {
					b.Fatalf("replayed %d records, wrote %d", rep.ReplayedRecords, n*(1+spends))
				}
				b.ReportMetric(float64(logBytes)/(1<<20), "log-MiB")
				b.ReportMetric(took.Seconds(), "replay-s")
				b.ReportMetric(float64(logBytes)/(1<<20)/took.Seconds(), "MiB/s")
				b.ReportMetric(float64(rep.ReplayedRecords)/took.Seconds(), "records/s")
				if err := e.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// spendBytes rewrites 36 bytes in the middle of a record, as the round-th
// spend of one of its outputs does.
func spendBytes(round int) engine.UpdateFunc {
	return func(current []byte) (engine.Mutation, error) {
		v := append([]byte(nil), current...)
		at := len(v) / 2
		for j := at; j < min(at+36, len(v)); j++ {
			v[j] = byte(round + j)
		}
		return engine.Mutation{Action: engine.Put, Value: v, Terms: engine.Terms{ProducedAt: 1}}, nil
	}
}

// BenchmarkLoneCommit times one caller's durable writes (SyncAlways, a
// 600-byte record a call) with none, two or four CPU-bound goroutines
// beside it, as a daemon's other work or the set statistics' hashing
// are: a commit should cost its fsync, not their time slices.
func BenchmarkLoneCommit(b *testing.B) {
	for _, busy := range []int{0, 2, 4} {
		b.Run(fmt.Sprintf("busy=%d", busy), func(b *testing.B) {
			e, err := Open(b.TempDir(), benchOptions(b, engine.SyncAlways))
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			stop := make(chan struct{})
			var spinning sync.WaitGroup
			for range busy {
				spinning.Go(func() { spin(stop) })
			}
			defer spinning.Wait()
			defer close(stop)
			v := make([]byte, 600)
			var i uint32
			for b.Loop() {
				i++
				if _, err := e.Update(context.Background(), []engine.Update{{Key: benchKey(i), Fn: putFn(v, engine.Terms{ProducedAt: 1})}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// spun keeps spin's arithmetic from being optimised away.
var spun atomic.Uint64

// spin keeps a processor busy, never blocking, until stop is closed.
func spin(stop <-chan struct{}) {
	x := uint64(1)
	for {
		select {
		case <-stop:
			spun.Add(x)
			return
		default:
		}
		for range 1000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
}

// BenchmarkLogCommitters times commits to the log alone, each a record
// and its fsync, from one to four callers at once: fsyncs/commit is how
// many commits an fsync covers, as the group commit shares them.
func BenchmarkLogCommitters(b *testing.B) {
	for _, callers := range []int{1, 2, 3, 4} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			w, err := createLog(filepath.Join(b.TempDir(), "wal.0"), 0)
			if err != nil {
				b.Fatal(err)
			}
			defer w.close()
			const each = 1000
			for b.Loop() {
				if err := commitFrom(w, callers, each); err != nil {
					b.Fatal(err)
				}
			}
			commits := float64(b.N * callers * each)
			n, _ := w.syncCount()
			b.ReportMetric(float64(n)/commits, "fsyncs/commit")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/commits, "µs/commit")
		})
	}
}
