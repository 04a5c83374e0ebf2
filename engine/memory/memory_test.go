package memory_test

import (
	"flag"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/enginetest"
	"github.com/utxostore/utxostore/engine/memory"
)

// flags are the suite's command-line settings (-long).
var flags = enginetest.RegisterFlags(flag.CommandLine)

func TestConformance(t *testing.T) {
	clock := enginetest.NewClock()
	enginetest.Run(t, enginetest.Harness{
		Open:  func(testing.TB, string) engine.Engine { return memory.NewWithClock(clock.Now) },
		Clock: clock,
	})
}

// Two memory engines must agree with each other: this checks that the
// differential driver itself is deterministic.
func TestDifferentialSelf(t *testing.T) {
	a, b := memory.New(), memory.New()
	defer a.Close()
	defer b.Close()
	enginetest.Differential(t, a, b, 1, flags.DifferentialOps())
}
