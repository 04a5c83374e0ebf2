package redis

import (
	"flag"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
)

var benchWait = flag.Int("wait", 0, "replicas every write batch of BenchmarkCreateSpendMix waits for")

// BenchmarkCreateSpendMix runs the other engines' workload
// (enginetest.BenchCreateSpendMix: flags -live, default 50,000 here, and
// -batch) on the cluster of UTXOSTORE_REDIS_ADDRS (or the script's). To
// compare one master with three, start the variants with the script and
// point the benchmark at each:
//
//	MASTERS=1 REPLICAS=0 REDIS_CLUSTER_BASE_PORT=7200 REDIS_CLUSTER_DIR=/tmp/utxo-redis-1m scripts/redis-cluster.sh start
//	UTXOSTORE_REDIS_ADDRS=127.0.0.1:7200 go test -run '^$' -bench CreateSpendMix -benchtime 100000x ./engine/redis
func BenchmarkCreateSpendMix(b *testing.B) {
	enginetest.BenchCreateSpendMix(b, enginetest.BenchHarness[*Engine]{
		// The store is the cluster: dir only names the key space, and the
		// sync mode is Redis's own configuration.
		Open: func(b *testing.B, dir string, _ engine.SyncMode) *Engine {
			return openAt(b, clusterAddrs, dir, func(o *Options) { o.Wait = *benchWait })
		},
		Live:  50_000,
		Flags: flags,
		// Smaller load batches than the local engines' 10,000.
		LoadBatch: 1000,
	})
}
