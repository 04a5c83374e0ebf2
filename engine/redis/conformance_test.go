package redis

import (
	"flag"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
	"github.com/utxostore/utxostore/engine/memory"
)

// Reopening is a new client on the same namespace.
func TestConformance(t *testing.T) {
	needCluster(t)
	enginetest.Run(t, enginetest.Harness{Open: clusterHarness, Persistent: true})
}

func TestConformanceSingleNode(t *testing.T) {
	needCluster(t)
	if singleAddr == "" {
		t.Skip("no single-node server: set UTXOSTORE_REDIS_SINGLE_ADDR")
	}
	enginetest.Run(t, enginetest.Harness{Persistent: true, Open: func(t testing.TB, dir string) engine.Engine {
		return openAt(t, []string{singleAddr}, dir, nil)
	}})
}

// flags are the suite's command-line settings (-long, the benchmark's).
var flags = enginetest.RegisterFlags(flag.CommandLine)

// differentialOps is the default run's length: 5,000. Every operation is a
// loopback round trip or two (a scan is one pipeline of 1,024 commands), and
// the suite's default 20,000 took 30 s on the shared two-core test machine,
// a third of the package's budget. -long runs the suite's own count (a
// million; give it -timeout 60m).
func differentialOps() int {
	if flags.Long {
		return flags.DifferentialOps()
	}
	return 5_000
}

func TestDifferential(t *testing.T) {
	ref := memory.New()
	defer ref.Close()
	e := openAt(t, clusterAddrs, t.TempDir(), nil)
	defer e.Close()
	enginetest.Differential(t, ref, e, 1, differentialOps())
}
