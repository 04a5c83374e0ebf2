package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/sozu"
)

func TestInspectSozu(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	e, err := sozu.Open(filepath.Join(data, sozu.Name), sozu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	batch := make([]engine.Update, n)
	for i := range batch {
		var k engine.Key
		binary.BigEndian.PutUint64(k[:8], uint64(i)*0x9E3779B97F4A7C15)
		batch[i] = engine.Update{Key: k, Fn: func([]byte) (engine.Mutation, error) {
			return engine.Mutation{Action: engine.Put, Value: make([]byte, 120), Terms: engine.Terms{ProducedAt: 7}}, nil
		}}
	}
	if _, err := e.Update(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	var table bytes.Buffer
	if err := inspectSozu(ctx, data, sozu.Options{}, &table); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + table.String())
	for _, want := range []string{"layer", "fill", "records            3000", "false-positive rate", "disk / encoded", "in use of", "buffered changes"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}

	var js bytes.Buffer
	if err := inspectSozuJSON(ctx, data, sozu.Options{}, &js); err != nil {
		t.Fatal(err)
	}
	var r sozuReport
	if err := json.Unmarshal(js.Bytes(), &r); err != nil {
		t.Fatalf("%v in %s", err, js.String())
	}
	if r.Entries != n || len(r.Layers) != len(r.Shape.Layers) || r.DiskBytes == 0 || r.LogFileBytes == 0 || r.FilterProbes == 0 {
		t.Errorf("report %+v", r)
	}
	if r.LivePages == 0 || r.LivePages*int64(r.Shape.PageSize) > r.PageFileBytes {
		t.Errorf("%d pages in use in a page file of %d bytes", r.LivePages, r.PageFileBytes)
	}
	if r.Layers[0].DepthShare <= 0 || r.FilterFalsePositiveRate > 0.05 {
		t.Errorf("depth share %v, false-positive rate %v", r.Layers[0].DepthShare, r.FilterFalsePositiveRate)
	}

	if err := inspectSozu(ctx, t.TempDir(), sozu.Options{}, &table); err == nil {
		t.Error("an empty directory was inspected without error")
	}
}

// --sozu-tuning reaches the engine: a store created with two shards is
// inspected as such, opening it with another layout is refused and leaves
// it as it was, and a setting that cannot be read is a usage error that
// touches nothing.
func TestSozuTuningFlag(t *testing.T) {
	data := t.TempDir()
	if _, stderr, err := run(t, "demo", "--engine", "sozu", "--sozu-tuning", "shards=2,alpha=0.8", "--data", data, "--blocks", "120", "--exit-after-seed"); err != nil {
		t.Fatalf("demo: %v\n%s", err, stderr)
	}
	inspect := func(args ...string) (sozuReport, string, error) {
		stdout, stderr, err := run(t, append([]string{"inspect", "--engine", "sozu", "--data", data, "--json"}, args...)...)
		var r sozuReport
		if err == nil {
			if jerr := json.Unmarshal([]byte(stdout), &r); jerr != nil {
				t.Fatalf("inspect --json: %v\n%s", jerr, stdout)
			}
		}
		return r, stderr, err
	}
	tuned, stderr, err := inspect("--sozu-tuning", "shards=2")
	if err != nil {
		t.Fatalf("inspect with the layout it was created with: %v\n%s", err, stderr)
	}
	if tuned.Shape.Shards != 2 || tuned.Entries == 0 {
		t.Fatalf("inspect reports %d shards and %d entries", tuned.Shape.Shards, tuned.Entries)
	}

	_, stderr, err = inspect()
	if code := exitCode(err); code != 1 || !strings.Contains(stderr, "tuning shards=2,b0=2048,fanout=3,layers=6") {
		t.Fatalf("opening a two-shard store with the default layout: exit %d\n%s", code, stderr)
	}
	again, _, err := inspect("--sozu-tuning", "shards=2")
	if err != nil || again.Entries != tuned.Entries {
		t.Fatalf("after the refused open: %d entries (was %d), %v", again.Entries, tuned.Entries, err)
	}

	fresh := t.TempDir()
	_, stderr, err = run(t, "demo", "--engine", "sozu", "--sozu-tuning", "alpha=1.5", "--data", fresh, "--blocks", "10", "--exit-after-seed")
	if code := exitCode(err); code != 2 || !strings.Contains(stderr, `"alpha=1.5"`) {
		t.Fatalf("--sozu-tuning alpha=1.5: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(fresh, sozu.Name)); !os.IsNotExist(err) {
		t.Fatalf("a refused tuning left a store behind: %v", err)
	}
}

// exitCode is the exit status of a finished run (0 when err is nil, -1 if
// the process did not exit).
func exitCode(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// A log damaged before its end (a record the fsync of a later write had
// made durable) is refused, untouched, with the flag that salvages it
// named; with --discard-corrupt-log the store opens with the log's writes
// before the one damaged.
func TestDiscardCorruptLogFlag(t *testing.T) {
	ctx := context.Background()
	live := filepath.Join(t.TempDir(), sozu.Name)
	e, err := sozu.Open(live, sozu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	put := func(from, to int) {
		batch := make([]engine.Update, 0, to-from)
		for i := from; i < to; i++ {
			var k engine.Key
			binary.BigEndian.PutUint64(k[:8], uint64(i)*0x9E3779B97F4A7C15)
			batch = append(batch, engine.Update{Key: k, Fn: func([]byte) (engine.Mutation, error) {
				return engine.Mutation{Action: engine.Put, Value: make([]byte, 120), Terms: engine.Terms{ProducedAt: 7}}, nil
			}})
		}
		if _, err := e.Update(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	logPath := func(dir string) string { return filepath.Join(dir, "wal.0") }
	// Where the log's records end (its file runs on in zeros past them).
	size := func() int64 {
		st, err := e.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.WALBytes
	}
	put(0, 100)
	firstCall := size() // durable: the call returned after its fsync
	put(100, 200)
	secondCall := size()
	put(200, 300) // its write's marks say the second call's was durable
	// At a block boundary every shard is at rest: the files are what a
	// crash would leave now.
	if err := e.Checkpoint(ctx, 1); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	crashed := filepath.Join(data, sozu.Name)
	copyDir(t, live, crashed)
	// The store is named in the data directory, as every store is.
	if err := (dataDir{path: data}).mark(sozu.Name, "mainnet"); err != nil {
		t.Fatal(err)
	}
	damaged := readFile(t, logPath(crashed))
	damaged[(firstCall+secondCall)/2] ^= 0x40
	writeFile(t, logPath(crashed), string(damaged))

	_, stderr, err := run(t, "inspect", "--engine", "sozu", "--data", data, "--json")
	if code := exitCode(err); code != 1 || !strings.Contains(stderr, "damaged in its middle") || !strings.Contains(stderr, "--discard-corrupt-log") {
		t.Fatalf("inspect over a damaged log: exit %d, want 1 naming --discard-corrupt-log:\n%s", code, stderr)
	}
	if !bytes.Equal(readFile(t, logPath(crashed)), damaged) {
		t.Fatal("the refused open changed the log")
	}
	stdout, stderr, err := run(t, "inspect", "--engine", "sozu", "--data", data, "--json", "--discard-corrupt-log")
	if err != nil {
		t.Fatalf("inspect --discard-corrupt-log: %v\n%s", err, stderr)
	}
	var r sozuReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("inspect --json: %v\n%s", err, stdout)
	}
	// The second call's shards may have written in more than one write:
	// those before the damaged one are kept.
	if r.Entries < 100 || r.Entries >= 200 || r.Recovery.DroppedBytes == 0 {
		t.Fatalf("salvaged store holds %d records (want the first call's 100 and part of the second's), recovery %+v", r.Entries, r.Recovery)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range entries {
		writeFile(t, filepath.Join(to, d.Name()), string(readFile(t, filepath.Join(from, d.Name()))))
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSozuSaysWhenItOutgrowsItsMemoryBudget: a Sozu store whose process
// holds more live heap than three quarters of its memory budget warns on
// stderr, naming the setting to raise, without --verbose; within its
// budget it says nothing.
func TestSozuSaysWhenItOutgrowsItsMemoryBudget(t *testing.T) {
	demo := []string{"demo", "--exit-after-seed", "--blocks", "20", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--engine", "sozu"}
	// The smallest budget its buffers allow: 4.75 MiB, below any
	// process's live heap.
	tight := "--sozu-tuning=memory=4980736,changes=65536,b0=16,vlogbuffer=65536,dirty=262144"
	_, stderr, err := run(t, append(demo, tight)...)
	if err != nil {
		t.Fatalf("demo with a tight memory budget: %v\n%s", err, stderr)
	}
	mustContain(t, "the warning", stderr, "passed three quarters of the memory budget", "--sozu-tuning memory=BYTES", "memory_budget_bytes=4980736")

	_, stderr, err = run(t, demo...)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, stderr)
	}
	if strings.Contains(stderr, "memory budget") {
		t.Fatalf("a store within its default budget warned:\n%s", stderr)
	}
}
