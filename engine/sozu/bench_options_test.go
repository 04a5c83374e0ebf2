package sozu

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/utxostore/utxostore/engine"
)

// benchOptions returns the options the benchmarks open with: the defaults,
// overridden by SOZU_BENCH_OPTS (an environment variable rather than
// flags, so one go test command can run this package and engine/pebble
// side by side), e.g.
//
//	SOZU_BENCH_OPTS=shards=2,b0=4096,fanout=3,layers=6,cap0=4085,cap=4085,alpha0=0.5,alpha1=0.75,alpha=0.75,inline=1024,filter=1048576,ckptlog=67108864,dirty=33554432,changes=67108864
func benchOptions(b *testing.B, mode engine.SyncMode) Options {
	o := Options{Sync: mode, Logf: b.Logf}
	spec := os.Getenv("SOZU_BENCH_OPTS")
	if spec == "" {
		return o
	}
	d := DefaultOptions()
	c0, c := d.Capacity[0], d.Capacity[len(d.Capacity)-1]
	a0, a := d.FlowRatio[0], d.FlowRatio[len(d.FlowRatio)-1]
	a1 := -1.0 // layer 1's α when set apart from the deeper layers
	for _, kv := range strings.Split(spec, ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			b.Fatalf("SOZU_BENCH_OPTS: %q: %v", kv, err)
		}
		switch k {
		case "shards":
			o.Shards = int(n)
		case "b0":
			o.Layer0Buckets = int(n)
		case "fanout":
			o.FanoutBits = int(n)
		case "layers":
			o.Layers = int(n)
		case "cap0":
			c0 = int(n)
		case "cap":
			c = int(n)
		case "alpha0":
			a0 = n
		case "alpha":
			a = n
		case "alpha1":
			a1 = n
		case "inline":
			o.InlineMax = int(n)
		case "filter":
			o.FilterKeys = int(n)
		case "ckptlog":
			o.CheckpointLogBytes = int(n)
		case "dirty":
			o.DirtyBytes = int(n)
		case "changes":
			o.ChangeBufferBytes = int(n)
		default:
			b.Fatalf("SOZU_BENCH_OPTS: unknown setting %q", k)
		}
	}
	o.Capacity, o.FlowRatio = []int{c0, c}, []float64{a0, a}
	if a1 >= 0 {
		o.FlowRatio = []float64{a0, a1, a}
	}
	b.Logf("options: %s", describe(o))
	return o
}

func describe(o Options) string {
	return fmt.Sprintf("shards=%d b0=%d fanout=%d layers=%d cap=%v alpha=%v inline=%d filter=%d ckptlog=%d dirty=%d changes=%d",
		o.Shards, o.Layer0Buckets, o.FanoutBits, o.Layers, o.Capacity, o.FlowRatio, o.InlineMax, o.FilterKeys, o.CheckpointLogBytes, o.DirtyBytes, o.ChangeBufferBytes)
}
