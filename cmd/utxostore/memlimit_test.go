package main

import (
	"context"
	"math"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// Opening a sozu store sets the process's Go memory limit to the store's
// memory budget, the command's decision since the engine leaves it alone;
// a lower limit stays, and a pebble store leaves the limit as it is.
func TestOpeningASozuStoreSetsTheGoMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	open := func(engineName string) {
		t.Helper()
		f := storeFlags{engine: engineName, data: filepath.Join(t.TempDir(), "data"), sync: "block", sozu: "memory=1073741824"}
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
		before, now int64
	}{
		{"sozu", math.MaxInt64, 1 << 30},
		{"sozu", 512 << 20, 512 << 20},
		{"pebble", math.MaxInt64, math.MaxInt64},
	} {
		debug.SetMemoryLimit(c.before)
		open(c.engine)
		if got := debug.SetMemoryLimit(-1); got != c.now {
			t.Errorf("%s store with a budget of 1 GiB, limit %d before: limit %d, want %d", c.engine, c.before, got, c.now)
		}
	}
}

// config's last line names the Go memory limit serve would run under and
// where it comes from: the sozu budget, or GOMEMLIMIT when that is lower.
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
	mustContain(t, "config under GOMEMLIMIT", lastLineOf([]string{"GOMEMLIMIT=512MiB"}, "--sozu-tuning", "memory=1073741824"), "536870912", "GOMEMLIMIT")
	mustContain(t, "config on pebble", lastLineOf(nil, "--engine", "pebble"), "(go memory limit)", "no limit", "only a sozu store sets one")
}
