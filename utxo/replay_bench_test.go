package utxo_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/utxostore/utxostore/bench/driver"
	"github.com/utxostore/utxostore/bench/report"
	"github.com/utxostore/utxostore/bench/workload"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/utxo"
)

// BenchmarkReplayMemory replays one synthetic chain (the shape of
// `utxostore bench`, smaller) through the public API over the memory
// engine, so that the cost measured is the store layer's. Besides ns/op it
// reports the store seconds of each class, as the bench table does.
func BenchmarkReplayMemory(b *testing.B) {
	replay(b, func() (driver.Target, func() error) {
		db, err := utxo.Open(context.Background(), memory.New(), utxo.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return driver.Store{DB: db}, db.Close
	})
}

// BenchmarkReplayMap replays the same chain on the benchmark's map
// reference, the floor BenchmarkReplayMemory is read against.
func BenchmarkReplayMap(b *testing.B) {
	replay(b, func() (driver.Target, func() error) {
		return driver.NewMap(), func() error { return nil }
	})
}

func replay(b *testing.B, open func() (driver.Target, func() error)) {
	cfg := workload.DefaultConfig()
	cfg.TargetUTXOs, cfg.Blocks = 200_000, 30
	cfg.TxsPerBlock = workload.Count{Min: 1, Mean: 1000, Max: 10_000}
	var stream bytes.Buffer
	w := workload.NewWriter(&stream)
	if _, err := workload.Generate(cfg, w.Write); err != nil {
		b.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	seconds := map[report.Class]float64{}
	b.ReportAllocs()
	for b.Loop() {
		target, closeTarget := open()
		res, err := driver.Run(ctx, target, workload.NewReader(bytes.NewReader(stream.Bytes())), driver.Options{})
		if err != nil {
			b.Fatal(err)
		}
		for c, cr := range res.Classes {
			seconds[c] += cr.Seconds
		}
		if err := closeTarget(); err != nil {
			b.Fatal(err)
		}
	}
	for c, s := range seconds {
		b.ReportMetric(s/float64(b.N), string(c)+"-s/op")
	}
}
