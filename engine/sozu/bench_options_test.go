package sozu

import (
	"fmt"
	"os"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/internal/testlog"
)

// benchOptions returns the options the benchmarks open with: the defaults,
// tuned by SOZU_BENCH_OPTS (ParseTuning's settings; an environment
// variable rather than flags, so one go test command can run this package
// and engine/pebble side by side), e.g.
//
//	SOZU_BENCH_OPTS=shards=2,b0=4096,fanout=3,layers=6,cap0=4085,cap=4085,alpha0=0.5,alpha1=0.75,alpha=0.75,inline=1024,filter=1048576,ckptlog=67108864,dirty=33554432,changes=67108864
func benchOptions(b *testing.B, mode engine.SyncMode) Options {
	spec := os.Getenv("SOZU_BENCH_OPTS")
	o, err := ParseTuning(spec)
	if err != nil {
		b.Fatalf("SOZU_BENCH_OPTS: %v", err)
	}
	o.Sync, o.Logger = mode, testlog.Logger(b)
	if spec != "" {
		b.Logf("options: %s", describe(o))
	}
	return o
}

func describe(o Options) string {
	return fmt.Sprintf("shards=%d b0=%d fanout=%d layers=%d cap=%v alpha=%v inline=%d filter=%d ckptlog=%d dirty=%d changes=%d",
		o.Shards, o.Layer0Buckets, o.FanoutBits, o.Layers, o.Capacity, o.FlowRatio, o.InlineMax, o.FilterKeys, o.CheckpointLogBytes, o.DirtyBytes, o.ChangeBufferBytes)
}
