package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"strconv"

	"github.com/utxostore/utxostore/engine/sozu"
	"github.com/utxostore/utxostore/index"
)

// The Go runtime's soft memory limit (debug.SetMemoryLimit, what
// GOMEMLIMIT sets) belongs to the process, so the command sets it, not
// the engine: a process holding a sozu store runs under the engine's
// memory budget (--sozu-tuning memory=BYTES), so that the garbage
// collector works harder rather than let the heap double past it. With
// --index the budget is the process's, so it grows by the address index's
// index.HeapAllowance (sozuOptions). A lower limit (GOMEMLIMIT) stays;
// other engines leave the runtime's as it is.

// memoryLimit is the limit a process holding a sozu store of options o
// runs under, and where it comes from.
func memoryLimit(o sozu.Options) (int64, string) {
	current, budget := debug.SetMemoryLimit(-1), int64(o.MemoryBudget())
	if current <= budget {
		return current, runtimeLimitSource(current) + ", below the sozu memory budget of " + strconv.FormatInt(budget, 10)
	}
	return budget, "the sozu memory budget (--sozu-tuning memory=BYTES)"
}

// limitMemory sets the process's memory limit for a sozu store of options o.
func limitMemory(o sozu.Options) {
	limit, _ := memoryLimit(o)
	debug.SetMemoryLimit(limit)
}

// runtimeLimitSource names where the runtime's own limit comes from.
func runtimeLimitSource(limit int64) string {
	if limit == math.MaxInt64 {
		return "no limit"
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return "GOMEMLIMIT"
	}
	return "the runtime's"
}

// printMemoryLimit writes, in config's format, the memory limit a command
// opening f's store runs under.
func (f *storeFlags) printMemoryLimit(w io.Writer) error {
	limit, source := debug.SetMemoryLimit(-1), ""
	if f.engine == sozu.Name {
		o, err := f.sozuOptions(false)
		if err != nil {
			return err
		}
		limit, source = memoryLimit(o)
		if f.index {
			source += ", with the address index's " + strconv.FormatInt(index.HeapAllowance, 10) + " (--index)"
		}
	} else {
		source = runtimeLimitSource(limit) + " (only a sozu store sets one)"
	}
	value := strconv.FormatInt(limit, 10)
	if limit == math.MaxInt64 {
		value = "none"
	}
	_, err := fmt.Fprintf(w, "%-20s %-40s %s\n", "(go memory limit)", value, source)
	return err
}
