package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/utxostore/utxostore/internal/dirstate"
	"github.com/utxostore/utxostore/utxo"
)

// someTxid is a well-formed transaction id for the commands that take one.
var someTxid = strings.Repeat("ab", 32)

// seedStore creates a small mainnet store with demo in a new data
// directory and returns the directory and the store's summary line.
func seedStore(t *testing.T, engineName string) (data, summary string) {
	t.Helper()
	data = filepath.Join(t.TempDir(), "data")
	stdout, stderr, err := run(t, "demo", "--engine", engineName, "--network", "mainnet", "--data", data, "--blocks", "20", "--exit-after-seed")
	if err != nil {
		t.Fatalf("demo --engine %s: %v\n%s", engineName, err, stderr)
	}
	return data, strings.TrimSpace(stdout)
}

// mustRefuse runs a command that must be refused with exit status 2 and a
// message holding wants.
func mustRefuse(t *testing.T, args []string, wants ...string) {
	t.Helper()
	mustExitWith(t, 2, args, wants...)
}

// mustFail runs a command that must fail with exit status 1 and a message
// holding wants.
func mustFail(t *testing.T, args []string, wants ...string) {
	t.Helper()
	mustExitWith(t, 1, args, wants...)
}

// mustExitWith runs a command that must exit with code and a message
// holding wants. One that goes on serving instead is stopped after a
// minute.
func mustExitWith(t *testing.T, code int, args []string, wants ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, utxostoreBin, args...)
	cmd.Stderr = &stderr
	err := cmd.Run()
	if got := exitCode(err); got != code || ctx.Err() != nil {
		t.Errorf("utxostore %s: exit %d (%v), want %d:\n%s", strings.Join(args, " "), got, err, code, stderr.String())
		return
	}
	mustContain(t, "utxostore "+strings.Join(args, " "), stderr.String(), wants...)
}

// refusedCommands are the commands of every kind, reading, writing and
// serving, run with extra store flags that the data directory refuses.
func refusedCommands(t *testing.T, data string, extra ...string) [][]string {
	blockFile := filepath.Join(t.TempDir(), "blocks.blk")
	writeFile(t, blockFile, "")
	listen := []string{"--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"}
	store := append([]string{"--data", data}, extra...)
	return [][]string{
		slices.Concat([]string{"info"}, store),
		slices.Concat([]string{"verify"}, store),
		slices.Concat([]string{"inspect"}, store, []string{someTxid}),
		slices.Concat([]string{"inspect", "--json"}, store),
		slices.Concat([]string{"config"}, store),
		slices.Concat([]string{"import", "--quiet"}, store, []string{blockFile}),
		slices.Concat([]string{"serve"}, listen, store),
		slices.Concat([]string{"serve", "--create"}, listen, store),
		slices.Concat([]string{"demo", "--exit-after-seed", "--blocks", "2"}, listen, store),
	}
}

// An --engine or --network other than the store's is refused by every
// command before anything is opened, naming both and what to do, and the
// data directory stays byte for byte as it was.
func TestDataDirectoryRefusesAnotherEngine(t *testing.T) {
	for _, c := range []struct{ created, other string }{{"pebble", "sozu"}, {"sozu", "pebble"}} {
		t.Run(c.created, func(t *testing.T) {
			data, _ := seedStore(t, c.created)
			before := dirstate.Of(t, data)
			for _, args := range refusedCommands(t, data, "--engine", c.other) {
				mustRefuse(t, args, "holds a "+c.created+" store", "not "+c.other, "leave out --engine", "another --data directory")
			}
			for _, args := range refusedCommands(t, data, "--network", "testnet") {
				mustRefuse(t, args, "holds a mainnet store", "not testnet", "leave out --network")
			}
			dirstate.MustBeUnchanged(t, data, before)
		})
	}
}

// The commands that read, and serve without --create, refuse a data
// directory that does not exist or holds no store, and create nothing.
func TestReadingCommandsCreateNothing(t *testing.T) {
	parent := t.TempDir()
	missing := filepath.Join(parent, "missing")
	empty := filepath.Join(parent, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	before := dirstate.Of(t, parent)
	listen := []string{"--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"}
	for _, c := range []struct{ dir, why string }{{missing, "does not exist"}, {empty, "holds no store"}} {
		for _, engineFlags := range [][]string{nil, {"--engine", "pebble"}, {"--engine", "sozu"}} {
			store := append([]string{"--data", c.dir}, engineFlags...)
			for _, args := range [][]string{
				slices.Concat([]string{"info"}, store),
				slices.Concat([]string{"verify"}, store),
				slices.Concat([]string{"inspect"}, store, []string{someTxid}),
				slices.Concat([]string{"inspect"}, store),
				slices.Concat([]string{"serve"}, listen, store),
			} {
				mustRefuse(t, args, "no store in data directory "+c.dir, c.why, "serve --create")
			}
		}
	}
	dirstate.MustBeUnchanged(t, parent, before)

	// config describes what serve would open, and opens nothing.
	stdout, stderr, err := run(t, "config", "--data", missing)
	if err != nil {
		t.Fatalf("config on a missing data directory: %v\n%s", err, stderr)
	}
	mustContain(t, "config", stdout, "engine ", defaultEngine, "network ", defaultNetwork)
	dirstate.MustBeUnchanged(t, parent, before)
}

// Without --engine every command opens the data directory's store on its
// own engine, whichever the default is, with that engine's defaults
// (--batch-wait); nothing of another engine appears beside it.
func TestDataDirectoryNamesItsEngine(t *testing.T) {
	for _, engineName := range []string{"sozu", "pebble"} {
		t.Run(engineName, func(t *testing.T) {
			data, summary := seedStore(t, engineName)
			if got := lastLine(t, "info", "--data", data); got != summary {
				t.Errorf("info without --engine: %s, want the %s store's %s", got, engineName, summary)
			}
			if got := lastLine(t, "verify", "--data", data); !strings.Contains(got, `"records":`) {
				t.Errorf("verify without --engine: %s", got)
			}
			stdout, stderr, err := run(t, "inspect", "--json", "--data", data)
			if engineName == "sozu" {
				var r sozuReport
				if err != nil || json.Unmarshal([]byte(stdout), &r) != nil || r.Entries == 0 {
					t.Errorf("inspect without a txid on the sozu store: %v\n%s%s", err, stdout, stderr)
				}
			} else if exitCode(err) != 2 || !strings.Contains(stderr, "one transaction id") {
				t.Errorf("inspect without a txid on the pebble store: %v\n%s", err, stderr)
			}
			config := output(t, "config", "--data", data)
			mustContain(t, "config", config, engineName, "data directory "+data,
				"batch-wait", map[string]string{"sozu": "default on engine sozu: 0s", "pebble": "default on engine pebble: 200µs"}[engineName])

			d := startDaemon(t, "serve", "--data", data, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
			_, status := httpGet(t, "http://"+d.http+"/api/status")
			mustContain(t, "/api/status", status, `"engine": "`+engineName+`"`)
			if err := d.stop(t, syscall.SIGTERM); err != nil {
				t.Fatalf("serve: %v\n%s", err, d.log())
			}

			marker, err := os.ReadFile(filepath.Join(data, storeFile))
			if err != nil {
				t.Fatal(err)
			}
			mustContain(t, storeFile, string(marker), `"engine":"`+engineName+`"`, `"network":"mainnet"`, `"format":`)
			entries, err := os.ReadDir(data)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if want := []string{storeFile, engineName}; !slices.Equal(names, slices.Sorted(slices.Values(want))) {
				t.Errorf("the data directory holds %v, want %v", names, want)
			}
		})
	}
}

// A data directory holding an engine's store and no storeFile is refused
// by every command, naming what it found and what to do, and nothing in it
// changes; writing the storeFile the message shows opens the store again.
// An engine's own directory given as the data directory is refused too.
func TestDataDirectoryWithoutStoreFileIsRefused(t *testing.T) {
	data, summary := seedStore(t, "sozu")
	marker := filepath.Join(data, storeFile)
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	before := dirstate.Of(t, data)
	for _, args := range refusedCommands(t, data) {
		mustFail(t, args, "holds the files of a store in "+filepath.Join(data, "sozu")+" but no "+storeFile+" file",
			fmt.Sprintf("reads format %d", utxo.FormatVersion), "remove "+filepath.Join(data, "sozu"), `{"engine":"sozu","network":"mainnet","format":`)
	}
	mustRefuse(t, []string{"info", "--data", filepath.Join(data, "sozu")}, "the sozu engine's directory", "--data "+data)
	dirstate.MustBeUnchanged(t, data, before)

	// Two engines' stores side by side are named both.
	pebbleData, _ := seedStore(t, "pebble")
	if err := os.Rename(filepath.Join(pebbleData, "pebble"), filepath.Join(data, "pebble")); err != nil {
		t.Fatal(err)
	}
	mustFail(t, []string{"info", "--data", data}, filepath.Join(data, "pebble")+" and "+filepath.Join(data, "sozu"), "but no "+storeFile+" file")
	if err := os.RemoveAll(filepath.Join(data, "pebble")); err != nil {
		t.Fatal(err)
	}

	writeFile(t, marker, fmt.Sprintf(`{"engine":"sozu","network":"mainnet","format":%d}`, utxo.FormatVersion))
	if got := lastLine(t, "info", "--data", data); got != summary {
		t.Errorf("info with the %s file written back: %s, want %s", storeFile, got, summary)
	}
}

// A storeFile that cannot be read, or that names a store whose engine
// subdirectory is gone, is refused by every command, saying what to do,
// and nothing in the directory changes.
func TestDataDirectoryRefusesADamagedStoreFile(t *testing.T) {
	data, _ := seedStore(t, "pebble")
	marker := filepath.Join(data, storeFile)
	writeFile(t, marker, `{"engine":"pebb`)
	before := dirstate.Of(t, data)
	for _, args := range refusedCommands(t, data) {
		mustFail(t, args, storeFile+" file is damaged", `{"engine":"pebble","network":"mainnet","format":`)
	}
	dirstate.MustBeUnchanged(t, data, before)

	writeFile(t, marker, `{"engine":"pebble","network":"mainnet","format":999}`)
	before = dirstate.Of(t, data)
	mustFail(t, []string{"info", "--data", data}, "format 999", "use the version of utxostore that wrote it")
	dirstate.MustBeUnchanged(t, data, before)

	writeFile(t, marker, fmt.Sprintf(`{"engine":"sozu","network":"mainnet","format":%d}`, utxo.FormatVersion))
	before = dirstate.Of(t, data)
	for _, args := range refusedCommands(t, data) {
		mustFail(t, args, "names a sozu store in "+filepath.Join(data, "sozu")+", which holds none", "remove "+marker)
	}
	dirstate.MustBeUnchanged(t, data, before)
}

// output is what a successful run printed on stdout.
func output(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := run(t, args...)
	if err != nil {
		t.Fatalf("utxostore %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return stdout
}
