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
		db, err := utxo.Open(ctx, memory.New(), utxo.Options{})
		if err != nil {
			b.Fatal(err)
		}
		res, err := driver.Run(ctx, driver.Store{DB: db}, workload.NewReader(bytes.NewReader(stream.Bytes())), driver.Options{})
		if err != nil {
			b.Fatal(err)
		}
		for c, cr := range res.Classes {
			seconds[c] += cr.Seconds
		}
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
	}
	for c, s := range seconds {
		b.ReportMetric(s/float64(b.N), string(c)+"-s/op")
	}
}
