package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/utxostore/utxostore/internal/dirstate"
)

// readingCommands are the commands that only read, on the store in data
// (a snapshot dump writes outside it).
func readingCommands(t *testing.T, data, engineName string) [][]string {
	store := []string{"--data", data}
	commands := [][]string{
		slices.Concat([]string{"info"}, store),
		slices.Concat([]string{"verify"}, store),
		slices.Concat([]string{"inspect"}, store, []string{someTxid}),
		slices.Concat([]string{"snapshot", "dump", "--format", "core"}, store, []string{filepath.Join(t.TempDir(), "utxo.dat")}),
	}
	if engineName == "sozu" {
		commands = append(commands, slices.Concat([]string{"inspect"}, store), slices.Concat([]string{"inspect", "--json"}, store))
	}
	return commands
}

// readStoreUnchanged runs every reading command on the store in data and
// expects each to succeed (inspect of an unknown txid aside, which says
// so) and the directory to stay byte for byte as it was. It returns what
// info printed.
func readStoreUnchanged(t *testing.T, data, engineName string) (summary string) {
	t.Helper()
	before := dirstate.Of(t, data)
	for _, args := range readingCommands(t, data, engineName) {
		stdout, stderr, err := run(t, args...)
		switch {
		case args[0] == "inspect" && slices.Contains(args, someTxid):
			if exitCode(err) != 1 || !strings.Contains(stderr, "TX_NOT_FOUND") {
				t.Errorf("utxostore %s: %v, want TX_NOT_FOUND\n%s", strings.Join(args, " "), err, stderr)
			}
		case err != nil:
			t.Errorf("utxostore %s: %v\n%s", strings.Join(args, " "), err, stderr)
		case args[0] == "info":
			summary = strings.TrimSpace(stdout)
		}
	}
	dirstate.MustBeUnchanged(t, data, before)
	return summary
}

// info, verify, inspect (with a txid, and without one on a sozu store) and
// snapshot dump open an existing store read-only: a store closed cleanly, and one whose
// import was killed, so that opening it replays a log, stay byte for byte
// as they were, and info reports what a writing open of the same files
// reports.
func TestReadingCommandsChangeNothing(t *testing.T) {
	genesis := chainPrefix(t, 1)
	chainFile := chainPrefix(t, 2000)
	for _, engineName := range []string{"pebble", "sozu"} {
		t.Run(engineName+"/closed", func(t *testing.T) {
			data, summary := seedStore(t, engineName)
			if got := readStoreUnchanged(t, data, engineName); got != summary {
				t.Errorf("info: %s, want %s", got, summary)
			}
		})
		t.Run(engineName+"/killed", func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			killMidImport(t, 2, "import", "--engine", engineName, "--data", data, "--progress-blocks", "200", chainFile)
			mustHaveALogToReplay(t, data, engineName)
			got := readStoreUnchanged(t, data, engineName)

			// A writing open of a copy recovers the same store: an
			// import of the genesis block, which the store holds
			// already, ends with its summary.
			written := filepath.Join(t.TempDir(), "copy")
			if err := os.CopyFS(written, os.DirFS(data)); err != nil {
				t.Fatal(err)
			}
			if want := lastLine(t, "import", "--quiet", "--data", written, genesis); got != want {
				t.Errorf("read-only info: %s\nafter a writing open: %s", got, want)
			}
		})
	}
}

// pebbleReplayed matches pebble's report of a log it replayed keys from.
var pebbleReplayed = regexp.MustCompile(`replayed [1-9][0-9]* keys`)

// mustHaveALogToReplay makes sure that opening the store in data replays
// records from its log, so that the test exercises recovery; it reads
// only (as the commands under test do, once they are right), on a copy.
func mustHaveALogToReplay(t *testing.T, data, engineName string) {
	t.Helper()
	probe := filepath.Join(t.TempDir(), "probe")
	if err := os.CopyFS(probe, os.DirFS(data)); err != nil {
		t.Fatal(err)
	}
	if engineName == "pebble" {
		_, stderr, err := run(t, "info", "--verbose", "--data", probe)
		if err != nil || !pebbleReplayed.MatchString(stderr) {
			t.Fatalf("the killed pebble store replays no log records (%v):\n%s", err, stderr)
		}
		return
	}
	stdout, stderr, err := run(t, "inspect", "--json", "--data", probe)
	var r sozuReport
	if err != nil || json.Unmarshal([]byte(stdout), &r) != nil || r.Recovery.ReplayedRecords == 0 {
		t.Fatalf("the killed sozu store replays no log records (%v):\n%s%s", err, stdout, stderr)
	}
}

// info, verify and inspect on a Redis namespace that holds no store are
// refused, saying so, and leave no key in it; on a namespace that holds
// one, they change none of its keys.
func TestReadingCommandsChangeNothingInRedis(t *testing.T) {
	addrs, client, namespace := redisNamespace(t, "readonly-test-")
	store := []string{"--engine", "redis", "--redis", addrs, "--redis-namespace", namespace, "--network", "regtest", "--data", t.TempDir()}
	commands := [][]string{
		slices.Concat([]string{"info"}, store),
		slices.Concat([]string{"verify"}, store),
		slices.Concat([]string{"inspect"}, store, []string{someTxid}),
	}
	for _, args := range commands {
		mustRefuse(t, args, "no store in Redis namespace \""+namespace+"\"", "import --engine redis --redis-namespace "+namespace)
	}
	if keys := namespaceKeys(t, client, namespace); len(keys) > 0 {
		t.Fatalf("reading an unused namespace made keys in it: %v", keys)
	}

	demo := slices.Concat([]string{"demo", "--exit-after-seed", "--blocks", "5", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"}, store)
	summary, stderr, err := run(t, demo...)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, stderr)
	}
	before := namespaceKeys(t, client, namespace)
	for _, args := range commands {
		stdout, stderr, err := run(t, args...)
		switch {
		case args[0] == "inspect":
			if exitCode(err) != 1 || !strings.Contains(stderr, "TX_NOT_FOUND") {
				t.Errorf("utxostore %s: %v, want TX_NOT_FOUND\n%s", strings.Join(args, " "), err, stderr)
			}
		case err != nil:
			t.Errorf("utxostore %s: %v\n%s", strings.Join(args, " "), err, stderr)
		case args[0] == "info" && strings.TrimSpace(stdout) != strings.TrimSpace(summary):
			t.Errorf("info: %s, want the store's %s", stdout, summary)
		}
	}
	after := namespaceKeys(t, client, namespace)
	for key, value := range before {
		if after[key] != value {
			t.Errorf("%q changed", key)
		}
	}
	for key := range after {
		if _, ok := before[key]; !ok {
			t.Errorf("%q appeared", key)
		}
	}
}

// redisNamespace is the Redis Cluster of UTXOSTORE_REDIS_ADDRS (the test
// is skipped without one), a client of it, and a namespace of the test's
// own, whose keys are deleted when the test ends.
func redisNamespace(t *testing.T, prefix string) (addrs string, client *goredis.ClusterClient, namespace string) {
	t.Helper()
	addrs = os.Getenv("UTXOSTORE_REDIS_ADDRS")
	if addrs == "" {
		t.Skip("UTXOSTORE_REDIS_ADDRS is not set: no Redis Cluster (scripts/test.sh sets it)")
	}
	client = goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: strings.Split(addrs, ",")})
	t.Cleanup(func() { client.Close() })
	namespace = prefix + strings.ReplaceAll(t.TempDir(), "/", "-")
	t.Cleanup(func() {
		for key := range namespaceKeys(t, client, namespace) {
			client.Del(context.Background(), key)
		}
	})
	return addrs, client, namespace
}

// namespaceKeys is every key of the namespace with its serialized value
// (DUMP), from every master.
func namespaceKeys(t *testing.T, client *goredis.ClusterClient, namespace string) map[string]string {
	t.Helper()
	ctx := context.Background()
	var names []string
	var mu sync.Mutex
	err := client.ForEachMaster(ctx, func(ctx context.Context, node *goredis.Client) error {
		iter := node.Scan(ctx, 0, namespace+":*", 1000).Iterator()
		var found []string
		for iter.Next(ctx) {
			found = append(found, iter.Val())
		}
		mu.Lock()
		names = append(names, found...)
		mu.Unlock()
		return iter.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	keys := make(map[string]string, len(names))
	for _, name := range names {
		value, err := client.Dump(ctx, name).Result()
		if err != nil {
			t.Fatalf("DUMP %q: %v", name, err)
		}
		keys[name] = value
	}
	return keys
}
