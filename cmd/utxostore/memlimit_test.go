package main

import (
	"context"
	"math"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/utxostore/utxostore/index"
)

// Opening a sozu store sets the process's Go memory limit to the store's
// memory budget, the command's decision since the engine leaves it alone,
// plus the address index's allowance under --index; a lower limit stays,
// and a pebble store leaves the limit as it is.
func TestOpeningASozuStoreSetsTheGoMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	open := func(engineName string, indexed bool) {
		t.Helper()
		f := storeFlags{engine: engineName, data: filepath.Join(t.TempDir(), "data"), sync: "block", sozu: "memory=1073741824", index: indexed}
		store, err := f.open(context.Background(), createStore)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		engine      string
		indexed     bool
		before, now int64
	}{
		{"sozu", false, math.MaxInt64, 1 << 30},
		{"sozu", true, math.MaxInt64, 1<<30 + index.HeapAllowance},
		{"sozu", false, 512 << 20, 512 << 20},
		{"pebble", false, math.MaxInt64, math.MaxInt64},
	} {
		debug.SetMemoryLimit(c.before)
		open(c.engine, c.indexed)
		if got := debug.SetMemoryLimit(-1); got != c.now {
			t.Errorf("%s store with a budget of 1 GiB (index %v), limit %d before: limit %d, want %d", c.engine, c.indexed, c.before, got, c.now)
		}
	}
}

// config's last line names the Go memory limit serve would run under and
// where it comes from: the sozu budget, with the address index's allowance
// under --index, or GOMEMLIMIT when that is lower.
func TestConfigShowsTheGoMemoryLimit(t *testing.T) {
	data := filepath.Join(t.TempDir(), "missing")
	lastLineOf := func(env []string, args ...string) string {
		t.Helper()
		stdout, stderr, err := runEnv(t, env, append([]string{"config", "--data", data}, args...)...)
		if err != nil {
			t.Fatalf("config %v: %v\n%s", args, err, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		return lines[len(lines)-1]
	}
	mustContain(t, "config on sozu", lastLineOf(nil, "--sozu-tuning", "memory=1073741824"), "(go memory limit)", "1073741824", "sozu memory budget")
	mustContain(t, "config on sozu with --index", lastLineOf(nil, "--sozu-tuning", "memory=1073741824", "--index"), "(go memory limit)", "3221225472", "sozu memory budget", "address index's 2147483648")
	mustContain(t, "config under GOMEMLIMIT", lastLineOf([]string{"GOMEMLIMIT=512MiB"}, "--sozu-tuning", "memory=1073741824"), "536870912", "GOMEMLIMIT")
	mustContain(t, "config on pebble", lastLineOf(nil, "--engine", "pebble"), "(go memory limit)", "no limit", "only a sozu store sets one")
}
