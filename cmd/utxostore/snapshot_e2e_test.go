package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/client"
	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/internal/testdata"
	"github.com/utxostore/utxostore/snapshot/core"
	"github.com/utxostore/utxostore/snapshot/teranode"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

const btcFile = "btc-mainnet-0-14131.blk"

// The facts of the shared data's README for the set after its last block,
// without the genesis coinbase, as Bitcoin Core counts it.
const (
	btcCoreTxOuts      = 13416
	btcCoreTotalAmount = 70_655_000_000_000
	btcTip             = 14131
)

var (
	importedOnce sync.Once
	importedDir  string
	importedErr  error
)

// importedStore returns a store that imported the shared Bitcoin blocks,
// made once for the tests that only read it.
func importedStore(t *testing.T) string {
	t.Helper()
	file := testdata.Path(t, btcFile)
	importedOnce.Do(func() {
		importedDir = filepath.Join(filepath.Dir(utxostoreBin), "imported")
		_, stderr, err := run(t, "import", "--quiet", "--sync", "block", "--data", importedDir, file)
		if err != nil {
			importedErr = fmt.Errorf("import: %v\n%s", err, stderr)
		}
	})
	if importedErr != nil {
		t.Fatal(importedErr)
	}
	return importedDir
}

// snapshotLine is the JSON line dump and load end with.
type snapshotLine struct {
	Format          string `json:"format"`
	Path            string `json:"path"`
	BaseHash        string `json:"base_hash"`
	BaseHeight      uint32 `json:"base_height"`
	TxOuts          uint64 `json:"txouts"`
	TotalAmount     uint64 `json:"total_amount"`
	HashSerialized3 string `json:"hash_serialized_3"`
	MuHash          string `json:"muhash"`
}

func (s snapshotLine) stats() string {
	return fmt.Sprintf("txouts %d total_amount %d hash_serialized_3 %s muhash %s", s.TxOuts, s.TotalAmount, s.HashSerialized3, s.MuHash)
}

// runSnapshotCmd runs a snapshot command that must succeed and returns its
// JSON line.
func runSnapshotCmd(t *testing.T, args ...string) snapshotLine {
	t.Helper()
	stdout, stderr, err := run(t, append([]string{"snapshot"}, args...)...)
	if err != nil {
		t.Fatalf("snapshot %v: %v\n%s", args, err, stderr)
	}
	var line snapshotLine
	if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &line); err != nil {
		t.Fatalf("snapshot %v printed %q: %v", args, stdout, err)
	}
	return line
}

// summaryOf runs info on a store.
func summaryOf(t *testing.T, dir string) map[string]any {
	t.Helper()
	stdout, stderr, err := run(t, "info", "--data", dir)
	if err != nil {
		t.Fatalf("info: %v\n%s", err, stderr)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	return sum
}

// independentStats computes the statistics of the coins of a Core dump
// with coinstats' Python implementation (its own serialization, ChaCha20
// and big integers), reading the coins with this package's reader.
func independentStats(t *testing.T, dump string) map[string]any {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("skipping: python3 is not installed; the independent statistics are a Python script")
	}
	f, err := os.Open(dump)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := core.NewReader(f, "mainnet")
	if err != nil {
		t.Fatal(err)
	}
	var input bytes.Buffer
	for {
		coins, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range coins {
			cb := 0
			if c.Coinbase {
				cb = 1
			}
			fmt.Fprintf(&input, "add %x %d %d %d %d s%x\n", c.TxID[:], c.Vout, c.Height, cb, c.Value, c.Script)
		}
	}
	cmd := exec.Command(python, filepath.Join("..", "..", "coinstats", "testdata", "coinstats.py"))
	cmd.Stdin = &input
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("coinstats.py: %v\n%s", err, stderr.String())
	}
	var stats map[string]any
	if err := json.Unmarshal(out, &stats); err != nil {
		t.Fatal(err)
	}
	return stats
}

// noLeftovers fails if the directory holds anything whose name contains
// part: what a failed load or dump must not leave.
func noLeftovers(t *testing.T, dir, part string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), part) {
			t.Errorf("left behind in %s: %s", dir, e.Name())
		}
	}
}

// TestSnapshotCoreDumpAndLoad dumps the imported Bitcoin chain in Core's
// format: the set Core holds after block 14131 (13,416 coins, 706,550
// BTC, no genesis coinbase), with the statistics an independent
// implementation computes from the file. Loaded into a new directory it
// gives the same statistics, info's summary of the same set at the same
// tip, and the same file dumped again.
func TestSnapshotCoreDumpAndLoad(t *testing.T) {
	store := importedStore(t)
	dir := t.TempDir()
	dump := filepath.Join(dir, "utxo.dat")
	dumped := runSnapshotCmd(t, "dump", "--format", "core", "--data", store, dump)
	if dumped.TxOuts != btcCoreTxOuts || dumped.TotalAmount != btcCoreTotalAmount || dumped.BaseHeight != btcTip ||
		dumped.BaseHash != lastBlockHash(t, testdata.Path(t, btcFile)).String() || dumped.Path != dump {
		t.Fatalf("dump: %+v", dumped)
	}
	indep := independentStats(t, dump)
	if indep["txouts"] != float64(btcCoreTxOuts) || indep["total_amount"] != float64(btcCoreTotalAmount) ||
		indep["muhash"] != dumped.MuHash || indep["hash_serialized_3"] != dumped.HashSerialized3 {
		t.Fatalf("dump: %s\nindependent: %v", dumped.stats(), indep)
	}
	// The statistics kept block by block in the chain state, which info
	// reads without a walk, are the independent implementation's too.
	imported := summaryOf(t, store)
	if imported["txouts"] != indep["txouts"] || imported["total_amount"] != indep["total_amount"] || imported["muhash"] != indep["muhash"] {
		t.Fatalf("info of the imported store: %v\nindependent: %v", imported, indep)
	}

	loadedDir := filepath.Join(dir, "loaded")
	loaded := runSnapshotCmd(t, "load", "--format", "core", "--height", "14131", "--expect-hash", dumped.HashSerialized3, "--data", loadedDir, dump)
	if loaded.stats() != dumped.stats() || loaded.BaseHash != dumped.BaseHash || loaded.BaseHeight != btcTip {
		t.Fatalf("load: %+v\ndump: %+v", loaded, dumped)
	}
	sum := summaryOf(t, loadedDir)
	if sum["utxos"] != float64(btcCoreTxOuts) || sum["satoshis"] != float64(btcCoreTotalAmount) || sum["height"] != float64(btcTip) || sum["blocks"] != float64(btcTip+1) ||
		sum["txouts"] != indep["txouts"] || sum["total_amount"] != indep["total_amount"] || sum["muhash"] != indep["muhash"] {
		t.Fatalf("info of the loaded store: %v\nindependent: %v", sum, indep)
	}
	again := filepath.Join(dir, "again.dat")
	if redumped := runSnapshotCmd(t, "dump", "--format", "core", "--data", loadedDir, again); redumped.stats() != dumped.stats() {
		t.Fatalf("dump of the loaded store: %+v", redumped)
	}
	first, _ := os.ReadFile(dump)
	second, _ := os.ReadFile(again)
	if !bytes.Equal(first, second) {
		t.Fatalf("the loaded store's dump (%d bytes) differs from the dump it was loaded from (%d bytes)", len(second), len(first))
	}
}

// TestSnapshotLoadRefusals: a load that fails, for any reason, leaves no
// store and nothing beside where it would have been; the reason is said.
func TestSnapshotLoadRefusals(t *testing.T) {
	store := importedStore(t)
	dir := t.TempDir()
	dump := filepath.Join(dir, "utxo.dat")
	runSnapshotCmd(t, "dump", "--format", "core", "--data", store, dump)
	raw, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.dat")
	os.WriteFile(truncated, raw[:len(raw)/2], 0o644)
	otherVersion := filepath.Join(dir, "version3.dat")
	os.WriteFile(otherVersion, append([]byte("utxo\xff\x03\x00"), raw[7:]...), 0o644)
	corrupt := filepath.Join(dir, "corrupt.dat")
	bad := bytes.Clone(raw)
	bad[5+2+4+32+8+32] = 0 // the first transaction's coin count
	os.WriteFile(corrupt, bad, 0o644)
	repeated := filepath.Join(dir, "repeated.dat")
	twice, first := firstTxTwice(t, raw)
	os.WriteFile(repeated, twice, 0o644)

	for _, tc := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"another hash", []string{"--height", "14131", "--expect-hash", strings.Repeat("ab", 32), dump}, 1, "not the expected " + strings.Repeat("ab", 32)},
		{"truncated", []string{"--height", "14131", truncated}, 1, "the file ends early"},
		{"corrupt", []string{"--height", "14131", corrupt}, 1, "corrupt"},
		{"a transaction twice", []string{"--height", "14131", repeated}, 1, "transaction " + first.String() + " again"},
		{"another version", []string{"--height", "14131", otherVersion}, 1, "version 3 is not supported"},
		{"another network", []string{"--height", "14131", "--network", "testnet3", dump}, 1, "the snapshot is mainnet's, not testnet3's"},
		{"no height", []string{dump}, 2, "give --height"},
		{"coins above the height", []string{"--height", "14000", dump}, 1, "above the snapshot's block"},
	} {
		target := filepath.Join(dir, "store-"+strings.ReplaceAll(tc.name, " ", "-"))
		args := append([]string{"snapshot", "load", "--format", "core", "--data", target}, tc.args...)
		_, stderr, err := run(t, args...)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != tc.code || !strings.Contains(stderr, tc.says) {
			t.Errorf("%s: %v (want exit status %d), stderr:\n%s\nwant it to say %q", tc.name, err, tc.code, stderr, tc.says)
		}
		if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %s exists after the refusal", tc.name, target)
		}
	}
	noLeftovers(t, dir, ".loading-")
	if _, stderr, err := run(t, "snapshot", "load", "--format", "core", "--height", "14131", "--data", store, dump); err == nil || !strings.Contains(stderr, "holds a sozu store already") {
		t.Errorf("a load into a data directory holding a store: %v\n%s", err, stderr)
	}
}

// firstTxTwice is the Core snapshot file with its first transaction
// written twice, the header counting its coins twice (its bytes are those
// the writer writes for that transaction alone), and that transaction.
func firstTxTwice(t *testing.T, file []byte) ([]byte, chainhash.Hash) {
	t.Helper()
	r, err := core.NewReader(bytes.NewReader(file), "mainnet")
	if err != nil {
		t.Fatal(err)
	}
	coins, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	h := r.Header()
	h.Coins = uint64(len(coins))
	var one bytes.Buffer
	w, err := core.NewWriter(&one, h)
	if err == nil {
		err = w.WriteTx(coins)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	const headerLen = 5 + 2 + 4 + 32 + 8
	tx := one.Bytes()[headerLen:]
	if !bytes.Equal(tx, file[headerLen:headerLen+len(tx)]) {
		t.Fatal("the writer writes the first transaction otherwise than the dump")
	}
	twice := bytes.Clone(file[:headerLen])
	binary.LittleEndian.PutUint64(twice[headerLen-8:], r.Header().Coins+uint64(len(coins)))
	return append(append(twice, tx...), file[headerLen:]...), coins[0].TxID
}

// TestSnapshotLoadRemovesWhatAKilledLoadLeft: a load killed with SIGKILL
// while it reads the snapshot leaves its temporary directory beside NEW;
// the next load into NEW removes it, and leaves alone one of another
// target's. Such directories used to stay until someone removed them by
// hand, an incomplete store each.
func TestSnapshotLoadRemovesWhatAKilledLoadLeft(t *testing.T) {
	store := importedStore(t)
	dir := t.TempDir()
	dump := filepath.Join(dir, "utxo.dat")
	runSnapshotCmd(t, "dump", "--format", "core", "--data", store, dump)
	raw, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	// The load reads the snapshot from a pipe: once a write of more than
	// the pipe holds (64 KiB) returns, the load has read from it, after
	// making its temporary directory.
	if len(raw) <= 64<<10 {
		t.Fatalf("the dump is %d bytes, no more than a pipe holds", len(raw))
	}
	pipe := filepath.Join(dir, "utxo.pipe")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "loaded")
	other := filepath.Join(dir, ".loaded-too.loading-123")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(utxostoreBin, "snapshot", "load", "--format", "core", "--height", "14131", "--data", target, pipe)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(pipe, os.O_WRONLY, 0)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal(err)
	}
	_, werr := w.Write(raw[:len(raw)-1])
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	w.Close()
	if werr != nil {
		t.Fatalf("writing the snapshot to the load: %v", werr)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".loaded.loading-*")); len(left) != 1 {
		t.Fatalf("the killed load left %v, want its temporary directory", left)
	}

	runSnapshotCmd(t, "load", "--format", "core", "--height", "14131", "--data", target, dump)
	if left, _ := filepath.Glob(filepath.Join(dir, ".loaded.loading-*")); len(left) > 0 {
		t.Errorf("after a load into %s: %v", target, left)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another target's temporary directory: %v", err)
	}
}

// teranodeSetOf writes, in dir, a Teranode set file after block 0xbb… at
// height 100 holding coin alone, with its sidecar, and returns its path.
func teranodeSetOf(t *testing.T, dir string, coin coinstats.Coin) string {
	t.Helper()
	block := chainhash.Hash{0xbb}
	path := filepath.Join(dir, block.String()+teranode.ExtSet)
	f, err := teranode.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := teranode.NewSetWriter(f, teranode.SetHeader{BlockHash: block, Height: 100})
	if err == nil {
		err = w.WriteTx([]coinstats.Coin{coin})
	}
	if err == nil {
		err = w.Close()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSnapshotLoadRefusesTeranodeCoinsNoStoreHolds: a Teranode set whose
// coin no store can hold, or no chain can have, is refused with the
// coin's place in the file and what was found there, and leaves no store
// and no temporary directory. A coin at vout 2^32-1 (a 109-byte file)
// used to crash the load out of memory, leaving its temporary directory;
// one at vout 2^26 loaded into a store whose every walk then reported that
// coin's record damaged; one of 2^63+5 satoshis, above MAX_MONEY, loaded
// as it was.
func TestSnapshotLoadRefusesTeranodeCoinsNoStoreHolds(t *testing.T) {
	dir := t.TempDir()
	coin := coinstats.Coin{Outpoint: coinstats.Outpoint{TxID: chainhash.Hash{0x11}}, Height: 1, Value: 1000, Script: []byte{0x51}}
	for _, tc := range []struct {
		name string
		edit func(*coinstats.Coin)
		says string
	}{
		{"vout 2^32-1", func(c *coinstats.Coin) { c.Vout = ^uint32(0) }, "(transaction 0 output 0 index): corrupt: output index 4294967295 is above 67108863"},
		{"vout 2^26", func(c *coinstats.Coin) { c.Vout = 1 << 26 }, "(transaction 0 output 0 index): corrupt: output index 67108864 is above 67108863"},
		{"2^63+5 satoshis", func(c *coinstats.Coin) { c.Value = 1<<63 + 5 }, "(transaction 0 output 0 value): corrupt: 9223372036854775813 satoshis is above the 2100000000000000"},
	} {
		c := coin
		tc.edit(&c)
		setDir := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
		os.Mkdir(setDir, 0o755)
		set := teranodeSetOf(t, setDir, c)
		target := filepath.Join(dir, "store-"+filepath.Base(setDir))
		_, stderr, err := run(t, "snapshot", "load", "--format", "teranode", "--data", target, set)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr, tc.says) {
			t.Errorf("%s: %v (want exit status 1), stderr:\n%.600s\nwant it to say %q", tc.name, err, stderr, tc.says)
		}
		if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %s exists after the refusal", tc.name, target)
		}
	}
	noLeftovers(t, dir, ".loading-")
}

// TestSnapshotTeranodeDumpAndLoad dumps the imported chain as Teranode's
// UTXO set and headers, each with its sidecar; the set is Core's (the same
// statistics as a core dump), and loading it gives the same statistics and
// the chain's transaction count from the headers. A set file changed after
// its sidecar was written is refused, and a store loaded from a snapshot,
// which lacks the headers below it, cannot dump one.
func TestSnapshotTeranodeDumpAndLoad(t *testing.T) {
	store := importedStore(t)
	dir := t.TempDir()
	coreDump := runSnapshotCmd(t, "dump", "--format", "core", "--data", store, filepath.Join(dir, "utxo.dat"))
	out := filepath.Join(dir, "teranode")
	dumped := runSnapshotCmd(t, "dump", "--format", "teranode", "--data", store, out)
	if dumped.stats() != coreDump.stats() || dumped.BaseHash != coreDump.BaseHash {
		t.Fatalf("teranode dump %s\ncore dump %s", dumped.stats(), coreDump.stats())
	}
	set := filepath.Join(out, dumped.BaseHash+".utxo-set")
	for _, file := range []string{set, filepath.Join(out, dumped.BaseHash+".utxo-headers")} {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(raw)
		sidecar, _ := os.ReadFile(file + ".sha256")
		if want := hex.EncodeToString(sum[:]) + "  " + filepath.Base(file) + "\n"; string(sidecar) != want {
			t.Errorf("sidecar of %s: %q, want %q", filepath.Base(file), sidecar, want)
		}
	}

	loadedDir := filepath.Join(dir, "loaded")
	loaded := runSnapshotCmd(t, "load", "--format", "teranode", "--expect-hash", coreDump.HashSerialized3, "--data", loadedDir, set)
	if loaded.stats() != coreDump.stats() || loaded.BaseHeight != btcTip {
		t.Fatalf("load: %+v", loaded)
	}
	sum := summaryOf(t, loadedDir)
	if sum["utxos"] != float64(btcCoreTxOuts) || sum["satoshis"] != float64(btcCoreTotalAmount) || sum["txs"] != float64(14247) || sum["blocks"] != float64(btcTip+1) {
		t.Fatalf("info of the loaded store: %v", sum)
	}

	raw, _ := os.ReadFile(set)
	raw[len(raw)/2] ^= 1
	os.WriteFile(set, raw, 0o644)
	target := filepath.Join(dir, "from-changed")
	if _, stderr, err := run(t, "snapshot", "load", "--format", "teranode", "--data", target, set); err == nil || !strings.Contains(stderr, "SHA-256") {
		t.Errorf("a set file that differs from its sidecar: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after the refusal", target)
	}

	fromLoaded := filepath.Join(dir, "from-loaded")
	if _, stderr, err := run(t, "snapshot", "dump", "--format", "teranode", "--data", loadedDir, fromLoaded); err == nil || !strings.Contains(stderr, "no header of the block at height 0") {
		t.Errorf("a teranode dump of a loaded store: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(fromLoaded); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after the refusal", fromLoaded)
	}
}

// TestSnapshotTeranodeLoadRefusesAnotherNetwork: a Teranode snapshot of
// mainnet, its headers file beside the set, loaded into a testnet3 store is
// refused as a Core file of another network is, naming the headers file,
// and leaves no store. The headers were checked only to end at the set's
// block, so the snapshot loaded.
func TestSnapshotTeranodeLoadRefusesAnotherNetwork(t *testing.T) {
	store := importedStore(t)
	dir := t.TempDir()
	dumped := runSnapshotCmd(t, "dump", "--format", "teranode", "--data", store, filepath.Join(dir, "teranode"))
	headers := filepath.Join(dir, "teranode", dumped.BaseHash+teranode.ExtHeaders)
	target := filepath.Join(dir, "loaded")
	_, stderr, err := run(t, "snapshot", "load", "--format", "teranode", "--network", "testnet3", "--data", target, dumped.Path)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr, headers+": snapshot: at byte 44 (block 0): the snapshot is mainnet's, not testnet3's") {
		t.Errorf("a mainnet teranode snapshot loaded into a testnet3 store: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after the refusal", target)
	}
	noLeftovers(t, dir, ".loading-")
}

// TestSnapshotTeranodeDiffs writes the additions and deletions of blocks
// 169 and 170 from the block file, and from the block store of a store
// imported with --index: they are Teranode's own files of those blocks,
// byte for byte (testdata.TeranodeDiffs), each with its sidecar.
func TestSnapshotTeranodeDiffs(t *testing.T) {
	blocks := testdata.Path(t, btcFile)
	checkDiffs(t, "--blocks", blocks)
	data := filepath.Join(t.TempDir(), "data")
	lastLine(t, "import", "--index", "--quiet", "--data", data, chainPrefix(t, 200))
	checkDiffs(t, "--data", data)
	if _, stderr, err := run(t, "snapshot", "diffs", "--format", "teranode", "--from", "150", "--to", "200", "--data", data, t.TempDir()); err == nil || !strings.Contains(stderr, "does not hold the store's block at height 200") {
		t.Errorf("--to past the store's tip: %v\n%s", err, stderr)
	}
	if _, stderr, err := run(t, "snapshot", "diffs", "--format", "teranode", "--from", "14131", "--to", "14132", "--blocks", blocks, t.TempDir()); err == nil || !strings.Contains(stderr, "ends at height 14131") {
		t.Errorf("--to past the file: %v\n%s", err, stderr)
	}
}

// checkDiffs writes the diffs of blocks 169 and 170 from source (a flag and
// its value) and compares them with Teranode's.
func checkDiffs(t *testing.T, source ...string) {
	t.Helper()
	out := t.TempDir()
	stdout, stderr, err := run(t, append(append([]string{"snapshot", "diffs", "--format", "teranode", "--from", "169", "--to", "170"}, source...), out)...)
	if err != nil {
		t.Fatalf("diffs from %v: %v\n%s", source, err, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("diffs printed %q", stdout)
	}
	for i, line := range lines {
		var written struct {
			Height               uint32
			Hash                 string
			Additions, Deletions string
		}
		if err := json.Unmarshal([]byte(line), &written); err != nil {
			t.Fatal(err)
		}
		want, ok := testdata.TeranodeDiffs[written.Height]
		if !ok || written.Height != uint32(169+i) {
			t.Fatalf("line %d: %s", i, line)
		}
		for _, f := range []struct{ path, want string }{{written.Additions, want.Additions}, {written.Deletions, want.Deletions}} {
			if filepath.Dir(f.path) != out || !strings.HasPrefix(filepath.Base(f.path), written.Hash+".utxo-") {
				t.Errorf("block %d: file %s", written.Height, f.path)
			}
			raw, err := os.ReadFile(f.path)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(raw)
			if got := hex.EncodeToString(sum[:]); got != f.want {
				t.Errorf("%s: SHA-256 %s, Teranode's %s", filepath.Base(f.path), got, f.want)
			}
			sidecar, _ := os.ReadFile(f.path + ".sha256")
			if string(sidecar) != f.want+"  "+filepath.Base(f.path)+"\n" {
				t.Errorf("sidecar of %s: %q", filepath.Base(f.path), sidecar)
			}
		}
	}
}

// TestSyncFromASnapshot follows btcd from a UTXO snapshot instead of the
// genesis block: a store synced to height N is dumped in Core's format,
// the node mines more blocks (with spends of coins in the snapshot), and
// the dump loaded into a new directory is followed to the node's tip. It
// ends with the set statistics, tip and block count of a store synced from
// genesis, and the same UTXO set but for the genesis coinbase, which a
// snapshot leaves out as Core does.
func TestSyncFromASnapshot(t *testing.T) {
	w, node := minedNode(t, "sync from a snapshot", 10)
	full := t.TempDir()
	sync := func(data string, extra ...string) utxo.Summary {
		t.Helper()
		return parseSummary(t, lastLine(t, append([]string{"sync", "--quiet", "--stop-at-tip", "--network", "simnet", "--data", data, "--peer", node.P2P}, extra...)...))
	}
	base := sync(full)
	dump := filepath.Join(t.TempDir(), "utxo.dat")
	dumped := runSnapshotCmd(t, "dump", "--format", "core", "--data", full, dump)
	if dumped.BaseHeight != base.Height || dumped.TxOuts != base.TxOuts || dumped.MuHash != base.MuHash {
		t.Fatalf("the dump at height %d: %+v; the store: %+v", base.Height, dumped, base)
	}
	mineWithTxs(t, node, w, 8)

	loaded := filepath.Join(t.TempDir(), "loaded")
	runSnapshotCmd(t, "load", "--format", "core", "--network", "simnet", "--height", fmt.Sprint(base.Height), "--expect-hash", dumped.HashSerialized3, "--data", loaded, dump)
	got, want := sync(loaded), sync(full)
	if got.Height != want.Height || got.Blocks != want.Blocks || got.TxOuts != want.TxOuts || got.TotalAmount != want.TotalAmount || got.MuHash != want.MuHash ||
		got.Utxos != want.Utxos-1 || got.Satoshis != want.Satoshis-50e8 {
		t.Fatalf("followed from the snapshot: %+v\nfrom genesis: %+v (the same set but for the genesis coinbase)", got, want)
	}
	if _, stderr, err := run(t, "verify", "--data", loaded); err != nil {
		t.Fatalf("verify of the store followed from the snapshot: %v\n%s", err, stderr)
	}
}

// storeStoppedInsideABlock returns a copy of the imported store holding,
// as a store stopped inside a block does, that block's first write: a
// transaction mined at the height above the tip, which it returns with the
// copy.
func storeStoppedInsideABlock(t *testing.T) (string, uint32) {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	if err := os.CopyFS(data, os.DirFS(importedStore(t))); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sf := storeFlags{data: data}
	store, err := sf.open(ctx, existingStore)
	if err != nil {
		t.Fatal(err)
	}
	tip, _, err := store.Tip(ctx)
	if err != nil {
		t.Fatal(err)
	}
	msg := wire.NewMsgTx(1)
	msg.AddTxIn(wire.NewTxIn(&wire.OutPoint{Index: wire.MaxPrevOutIndex}, []byte{0x03, 0x01, 0x02, 0x03}, nil))
	msg.AddTxOut(wire.NewTxOut(50e8, []byte{0x51}))
	above := model.MinedBlockInfo{BlockID: 1 << 30, BlockHeight: tip.Height + 1, OnLongestChain: true}
	if _, err := store.Create(ctx, chain.NewTx(msg), tip.Height+1, utxo.WithMinedBlockInfo(above), utxo.WithCoinbase(true)); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	return data, tip.Height + 1
}

// TestVerifyNamesOutputsSpentByTransactionsNeverCreated: through a
// daemon, a validator spends block 1's coinbase and stops before creating
// the transaction. verify names the output and its spender and how to
// settle them, where it used to find only that the statistics the store
// keeps are not a walk's; snapshot dump is refused and points to verify.
// Unspend of the spend settles it, and verify passes.
func TestVerifyNamesOutputsSpentByTransactionsNeverCreated(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	if err := os.CopyFS(data, os.DirFS(importedStore(t))); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	throughADaemon := func(call func(c *client.Client) error) {
		t.Helper()
		d := startDaemon(t, "serve", "--data", data, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
		c, err := client.Dial(d.grpc, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		err = call(c)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := d.stop(t, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	block1Coinbase, _ := chainhash.NewHashFromStr("0e3e2357e806b6cdb1f70b54c3a3a17b6714ee1f0e68bebb44a74b1efd512098")
	msg := wire.NewMsgTx(1)
	msg.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: *block1Coinbase}, nil, nil))
	msg.AddTxOut(wire.NewTxOut(49e8, []byte{0x51}))
	ghost := chain.NewTx(msg)
	var spends []*utxo.Spend
	throughADaemon(func(c *client.Client) (err error) {
		spends, err = c.Spend(ctx, ghost)
		return err
	})

	want := fmt.Sprintf("%s:0 by %s:0", block1Coinbase, ghost.ID)
	if _, stderr, err := run(t, "verify", "--data", data); err == nil || !strings.Contains(stderr, "1 outputs of the set are spent by transactions the store does not hold") ||
		!strings.Contains(stderr, want) || !strings.Contains(stderr, "Unspend naming them frees them") {
		t.Fatalf("verify of a store whose block-1 coinbase is spent by a transaction never created: %v\n%s", err, stderr)
	}
	out := filepath.Join(t.TempDir(), "out")
	if _, stderr, err := run(t, "snapshot", "dump", "--format", "core", "--data", data, out); err == nil || !strings.Contains(stderr, "run utxostore verify") {
		t.Fatalf("dump of that store: %v\n%s", err, stderr)
	}

	throughADaemon(func(c *client.Client) error { return c.Unspend(ctx, spends, false) })
	if _, stderr, err := run(t, "verify", "--data", data); err != nil {
		t.Fatalf("verify once the spend is undone: %v\n%s", err, stderr)
	}
}

// TestSnapshotDumpRefusesPartOfABlock: a store stopped inside a block
// holds that block's first writes, which a walk of its records cannot
// tell from the tip's set. A dump of it, of the data directory or from a
// daemon serving it (--server), checks its coins against the statistics
// the store keeps at its tip, refuses the set with both, and leaves no
// file. A daemon used to stream the walk unchecked: a file naming block
// 14131 but holding a coin of block 14132.
func TestSnapshotDumpRefusesPartOfABlock(t *testing.T) {
	data, _ := storeStoppedInsideABlock(t)
	refused := func(source ...string) {
		t.Helper()
		for _, format := range []string{"core", "teranode"} {
			out := filepath.Join(t.TempDir(), "out")
			args := append(append([]string{"snapshot", "dump", "--format", format}, source...), out)
			_, stderr, err := run(t, args...)
			if err == nil || !strings.Contains(stderr, "are not the set its statistics describe at its tip (txouts 13416") ||
				!strings.Contains(stderr, "connect that block again") {
				t.Fatalf("%s dump (%s) of a store holding part of the block above its tip: %v\n%s", format, source[0], err, stderr)
			}
			left, _ := filepath.Glob(out + "*")
			if format == "teranode" {
				left, _ = filepath.Glob(filepath.Join(out, "*"))
			}
			if len(left) > 0 {
				t.Fatalf("the refused %s dump (%s) left %v", format, source[0], left)
			}
		}
	}
	refused("--data", data)
	d := startDaemon(t, "serve", "--data", data, "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
	refused("--server", d.grpc)
}

// TestVerifyNamesTheBlockAStoreWasStoppedInside: verify of a store stopped
// inside a block names the block to connect again, rather than only
// finding that the statistics the store keeps are not a walk's; and it
// changes nothing, so a second run says the same.
func TestVerifyNamesTheBlockAStoreWasStoppedInside(t *testing.T) {
	data, height := storeStoppedInsideABlock(t)
	want := fmt.Sprintf("mined at height %d, above its tip at %d: it was stopped inside block %d; connect that block again", height, height-1, height)
	for range 2 {
		if _, stderr, err := run(t, "verify", "--data", data); err == nil || !strings.Contains(stderr, want) {
			t.Fatalf("verify of a store stopped inside block %d: %v\n%s", height, err, stderr)
		}
	}
}
