package main

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/utxostore/utxostore/utxo"
)

// parseStoreFlags parses args as the store flags of a command.
func parseStoreFlags(t *testing.T, args ...string) (*storeFlags, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &storeFlags{}
	f.register(fs)
	return f, fs.Parse(args)
}

func TestBatchWaitDefaultsToTheEngines(t *testing.T) {
	f, err := parseStoreFlags(t)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{"sozu": 0, "memory": 0, "pebble": utxo.DefaultBatchWait, "redis": utxo.DefaultBatchWait}
	for _, name := range engineNames() {
		w, ok := want[name]
		if !ok {
			t.Fatalf("engine %s has no expected --batch-wait default in this test", name)
		}
		if got := f.batchWait.orDefault(name); got != w {
			t.Errorf("engine %s: --batch-wait defaults to %v, want %v", name, got, w)
		}
	}
}

func TestBatchWaitGivenOverridesEveryEngine(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want time.Duration
	}{{"0", 0}, {"1ms", time.Millisecond}} {
		f, err := parseStoreFlags(t, "--batch-wait", tc.arg)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range engineNames() {
			if got := f.batchWait.orDefault(name); got != tc.want {
				t.Errorf("--batch-wait %s on engine %s: %v, want %v", tc.arg, name, got, tc.want)
			}
		}
	}
}

func TestBatchWaitRefusesBadValues(t *testing.T) {
	for arg, want := range map[string]string{"-1ms": "cannot be negative", "soon": "not a duration"} {
		if _, err := parseStoreFlags(t, "--batch-wait", arg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--batch-wait %s: %v, want an error saying %q", arg, err, want)
		}
	}
}
