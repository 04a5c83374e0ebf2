package main

import (
	"encoding/binary"
	"errors"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg"

	"github.com/utxostore/utxostore/internal/peertest"
	"github.com/utxostore/utxostore/internal/testdata"
)

// refusedImport is a block file that import refuses before it connects
// any block: args are the import's flags and file, but --data.
type refusedImport struct {
	name string
	args func(t *testing.T) []string
	says string
}

// mainnetFrame returns the blk*.dat frame of block n of the real mainnet
// file, or skips t when the file is absent.
func mainnetFrame(t *testing.T, n int) []byte {
	t.Helper()
	data, err := os.ReadFile(testdata.Path(t, "btc-mainnet-0-14131.blk"))
	if err != nil {
		t.Fatal(err)
	}
	off := 0
	for range n {
		off += 8 + int(binary.LittleEndian.Uint32(data[off+4:]))
	}
	return data[off : off+8+int(binary.LittleEndian.Uint32(data[off+4:]))]
}

// writeTemp writes content to a new file named name and returns its path.
func writeTemp(t *testing.T, name string, content []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// refusedImports are the refusals before the first block: the real
// mainnet file's blocks on another network, its first block cut short,
// its block 1 where the genesis block belongs, another network's genesis
// block, a file that does not exist and one that holds no block.
var refusedImports = []refusedImport{
	{"another network's block file", func(t *testing.T) []string {
		return []string{"--network", "testnet3", chainPrefix(t, 3)}
	}, "block file of another network"},
	{"a truncated first block", func(t *testing.T) []string {
		return []string{writeTemp(t, "truncated.blk", mainnetFrame(t, 0)[:120])}
	}, "truncated"},
	{"block 1 at height 0", func(t *testing.T) []string {
		return []string{writeTemp(t, "block1.blk", mainnetFrame(t, 1))}
	}, "genesis block"},
	{"testnet3's genesis block on mainnet", func(t *testing.T) []string {
		return []string{"--network", "mainnet", writeGenesis(t, &chaincfg.TestNet3Params)}
	}, "genesis block"},
	{"a missing file", func(t *testing.T) []string {
		return []string{filepath.Join(t.TempDir(), "missing.blk")}
	}, "no such file"},
	{"not a block file", func(t *testing.T) []string {
		return []string{writeTemp(t, "notes.txt", []byte("these are my notes, not blocks\n"))}
	}, ""},
}

// importFlags are the flags every refused import runs with: --index too,
// so that the address index and the block store are created as well.
func importFlags(engineName, data string) []string {
	return []string{"import", "--quiet", "--index", "--sync", "block", "--engine", engineName, "--data", data}
}

// TestImportRefusedIntoANewDataDirLeavesNone: an import refused before its
// first block, into a data directory that did not exist (two levels of
// it), leaves no directory behind, and the right import into the same
// directory then succeeds. Before, the refusal left a new empty store
// there (its engine's directory, the UTXOSTORE file naming engine and
// network, the index and the block store), which a retry with another
// --network was refused by.
func TestImportRefusedIntoANewDataDirLeavesNone(t *testing.T) {
	for _, engineName := range []string{"sozu", "pebble"} {
		for _, c := range refusedImports {
			t.Run(engineName+"/"+c.name, func(t *testing.T) {
				args := c.args(t)
				parent := filepath.Join(t.TempDir(), "new")
				data := filepath.Join(parent, "data")
				mustFail(t, slices.Concat(importFlags(engineName, data), args), c.says)
				if _, err := os.Stat(parent); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the refused import left %s behind (%v): %v", parent, err, tree(t, parent))
				}
			})
		}
	}
}

// TestImportIntoADataDirAfterARefusal: after an import of the real
// mainnet file refused as another network's (--network testnet3) into a
// new data directory, whose refusal names the file's network, the import
// it suggests (--network mainnet) into the same directory succeeds, and
// the store is mainnet's.
func TestImportIntoADataDirAfterARefusal(t *testing.T) {
	blocks := chainPrefix(t, 10)
	data := filepath.Join(t.TempDir(), "data")
	mustFail(t, slices.Concat(importFlags("sozu", data), []string{"--network", "testnet3", blocks}), "block file of another network",
		"import this file with --network mainnet into a data directory that holds no store")
	got := lastLine(t, slices.Concat(importFlags("sozu", data), []string{"--network", "mainnet", blocks})...)
	mustContain(t, "the import after the refusal", got, `"blocks":10,`, `"height":9,`)
	if info := lastLine(t, "info", "--data", data, "--network", "mainnet"); info != got {
		t.Errorf("info after the import: %s, want %s", info, got)
	}
}

// TestImportRefusedIntoAnExistingDirLeavesItAsItWas: a data directory
// that existed, holding no store, keeps what it held and nothing more: an
// empty one stays empty, one holding a user's file keeps just that file.
func TestImportRefusedIntoAnExistingDirLeavesItAsItWas(t *testing.T) {
	for _, c := range refusedImports {
		t.Run(c.name, func(t *testing.T) {
			args := c.args(t)
			empty := t.TempDir()
			mustFail(t, slices.Concat(importFlags("sozu", empty), args), c.says)
			if got := tree(t, empty); len(got) != 0 {
				t.Errorf("the refused import left %v in the empty data directory %s", got, empty)
			}
			used := t.TempDir()
			writeFile(t, filepath.Join(used, "README"), "mine\n")
			mustFail(t, slices.Concat(importFlags("pebble", used), args), c.says)
			if got := tree(t, used); !slices.Equal(got, []string{"README"}) {
				t.Errorf("the refused import left %v in the data directory %s, which held only README", got, used)
			}
		})
	}
}

// TestImportRefusedIntoAStoreLeavesIt: a refused import into a data
// directory that holds a store, with blocks or with none, leaves the store
// as it was and usable: info answers as before, and it takes the right
// blocks after.
func TestImportRefusedIntoAStoreLeavesIt(t *testing.T) {
	// A store with blocks: the real chain's first ten.
	blocks := chainPrefix(t, 10)
	data := filepath.Join(t.TempDir(), "data")
	summary := lastLine(t, slices.Concat(importFlags("sozu", data), []string{blocks})...)
	before := tree(t, data)
	// Blocks below the store's tip are skipped unread: the refusals that
	// reach a store with blocks are of the files, and of its next block.
	next := mainnetFrame(t, 10)
	for _, c := range []refusedImport{
		refusedImports[4], refusedImports[5],
		{"a truncated next block", func(t *testing.T) []string {
			return []string{"--start-height", "10", writeTemp(t, "truncated.blk", next[:len(next)-1])}
		}, "truncated"},
		{"block 1 as the next block", func(t *testing.T) []string {
			return []string{"--start-height", "10", writeTemp(t, "block1.blk", mainnetFrame(t, 1))}
		}, "height 10"},
	} {
		mustFail(t, slices.Concat(importFlags("sozu", data), c.args(t)), c.says)
		if got := lastLine(t, "info", "--data", data); got != summary {
			t.Errorf("%s: info after the refusal: %s, want %s", c.name, got, summary)
		}
	}
	if after := tree(t, data); !slices.Equal(before, after) {
		t.Errorf("the refused imports changed the data directory's top:\nbefore %v\nafter  %v", before, after)
	}

	// A store that holds no block yet, created by serve --create: the
	// refusals leave it, and the right file imports into it.
	empty := filepath.Join(t.TempDir(), "data")
	d := startDaemon(t, "serve", "--create", "--data", empty, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
	if err := d.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("serve --create: %v\n%s", err, d.log())
	}
	emptySummary := lastLine(t, "info", "--data", empty)
	mustContain(t, "the new store", emptySummary, `"blocks":0,`)
	for _, c := range refusedImports[1:] {
		mustFail(t, slices.Concat([]string{"import", "--quiet", "--data", empty}, c.args(t)), c.says)
		if got := lastLine(t, "info", "--data", empty); got != emptySummary {
			t.Errorf("%s: info on the empty store after the refusal: %s, want %s", c.name, got, emptySummary)
		}
	}
	if got := lastLine(t, "import", "--quiet", "--data", empty, blocks); got != summary {
		t.Errorf("import into the empty store after the refusals: %s, want %s", got, summary)
	}
}

// tree lists the names at the top of dir, sorted; none when it does not
// exist.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// TestServeCreateRefusedLeavesNoStore: serve --create refused after it
// opened its new store (--electrum without --index) leaves no data
// directory behind, as import does.
func TestServeCreateRefusedLeavesNoStore(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "new")
	mustRefuse(t, []string{"serve", "--create", "--data", filepath.Join(parent, "data"), "--electrum", "127.0.0.1:0",
		"--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"}, "--electrum needs --index")
	if _, err := os.Stat(parent); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused serve --create left %s behind (%v): %v", parent, err, tree(t, parent))
	}
}

// TestServeCreateThatCannotListenLeavesNoStore: serve --create whose
// address is taken fails after it created its store, and leaves no data
// directory behind: the retry on a free address creates it afresh.
func TestServeCreateThatCannotListenLeavesNoStore(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	parent := filepath.Join(t.TempDir(), "new")
	mustFail(t, []string{"serve", "--create", "--data", filepath.Join(parent, "data"),
		"--grpc", taken.Addr().String(), "--http", "127.0.0.1:0"}, "address already in use")
	if _, err := os.Stat(parent); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("serve --create that could not listen left %s behind (%v): %v", parent, err, tree(t, parent))
	}
}

// TestSyncStoppedBeforeItsFirstBlockLeavesNoStore: a sync into a new data
// directory stopped with SIGTERM while its peer has not even answered the
// handshake stops at once (the follower's handshake does not run to its
// timeout) and leaves no store behind, so the next sync may name another
// --network.
func TestSyncStoppedBeforeItsFirstBlockLeavesNoStore(t *testing.T) {
	addr, connected := peertest.ServeSilent(t)
	parent := filepath.Join(t.TempDir(), "new")
	cmd, _ := startSync(t, "sync", "--quiet", "--network", "simnet", "--data", filepath.Join(parent, "data"), "--peer", addr)
	<-connected
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() { _ = cmd.Wait(); close(stopped) }() // its exit status is not the point
	select {
	case <-stopped:
	case <-time.After(15 * time.Second): // half the handshake's timeout
		t.Fatal("the sync was still running 15 s after SIGTERM")
	}
	if _, err := os.Stat(parent); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the sync stopped before its first block left %s behind (%v): %v", parent, err, tree(t, parent))
	}
}

// TestImportRefusedIntoANewRedisNamespaceLeavesItEmpty: on engine redis,
// an import refused before its first block leaves no key in the namespace
// it created, as it leaves no data directory, so the right import follows
// there; a namespace that held a store before the refused command keeps
// every key.
func TestImportRefusedIntoANewRedisNamespaceLeavesItEmpty(t *testing.T) {
	addrs, client, namespace := redisNamespace(t, "refusal-test-")
	blocks := chainPrefix(t, 3)
	store := func(data string) []string {
		return []string{"import", "--engine", "redis", "--redis", addrs, "--redis-namespace", namespace, "--data", data}
	}
	mustFail(t, slices.Concat(store(filepath.Join(t.TempDir(), "data")), []string{"--network", "testnet3", blocks}), "block file of another network")
	if keys := namespaceKeys(t, client, namespace); len(keys) > 0 {
		t.Fatalf("the refused import left %d keys in the namespace it created: %v", len(keys), slices.Collect(maps.Keys(keys)))
	}
	data := filepath.Join(t.TempDir(), "data")
	got := lastLine(t, slices.Concat(store(data), []string{"--network", "mainnet", blocks})...)
	mustContain(t, "the import after the refusal", got, `"blocks":3,`)

	// The namespace holds a store now: a refusal in another new data
	// directory on it changes none of its keys.
	before := namespaceKeys(t, client, namespace)
	mustFail(t, slices.Concat(store(filepath.Join(t.TempDir(), "other")), []string{"--network", "testnet3", blocks}))
	if after := namespaceKeys(t, client, namespace); !maps.Equal(before, after) {
		t.Fatalf("a refusal on a namespace holding a store changed its keys: %d before, %d after", len(before), len(after))
	}
}
