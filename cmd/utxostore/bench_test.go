package main

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/utxostore/utxostore/bench/driver"
	"github.com/utxostore/utxostore/bench/report"
	"github.com/utxostore/utxostore/bench/workload"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/internal/testdata"
	"github.com/utxostore/utxostore/internal/testlog"
	"github.com/utxostore/utxostore/utxo"
)

// availableBenchEngines is every engine this test can run: the embedded
// ones, redis only where a cluster is configured, and the map.
func availableBenchEngines() string {
	names := []string{}
	for _, name := range engineNames() {
		if name == "redis" && os.Getenv("UTXOSTORE_REDIS_ADDRS") == "" {
			continue
		}
		names = append(names, name)
	}
	return strings.Join(append(names, mapEngine), ",")
}

func runBenchArgs(t *testing.T, args ...string) *benchOutput {
	t.Helper()
	if addrs := os.Getenv("UTXOSTORE_REDIS_ADDRS"); addrs != "" {
		args = append([]string{"--redis", addrs}, args...)
	}
	cfg, err := parseBench(args)
	if err != nil {
		t.Fatal(err)
	}
	cfg.exe = utxostoreBin
	out, err := runBenchConfig(context.Background(), cfg, testlog.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	if err := report.WriteTable(&table, out.Results); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())
	return out
}

// TestBenchSmallAllEngines is the benchmark as a cross-engine check: every
// available engine, each in its own child process, replays one synthetic
// stream (reorgs and double spends included) to the map's digest.
func TestBenchSmallAllEngines(t *testing.T) {
	dir := t.TempDir()
	jsonPath, chartPath := filepath.Join(dir, "bench.json"), filepath.Join(dir, "bench.svg")
	out := runBenchArgs(t, "--engines", availableBenchEngines(), "--blocks", "60", "--utxos", "3000", "--txs", "40",
		"--reorg-rate", "0.1", "--sync", "block", "--json", jsonPath, "--chart", chartPath)
	if err := out.check(); err != nil {
		t.Fatal(err)
	}
	if want := len(strings.Split(availableBenchEngines(), ",")); len(out.Results) != want {
		t.Fatalf("%d results for %d engines", len(out.Results), want)
	}
	for _, r := range out.Results {
		if !r.DigestOK || r.Digest != out.Reference.Digest {
			t.Errorf("%s: digest %s, reference %s", r.Engine, r.Digest, out.Reference.Digest)
		}
		if r.Classes[report.Reject].Calls == 0 || r.Classes[report.Disconnect].Calls == 0 {
			t.Errorf("%s: no double spend or no reorg was measured: %+v", r.Engine, r.Classes)
		}
		if r.PeakRSSBytes == 0 || r.ReplayPeakRSSBytes == 0 || r.ReplayPeakRSSBytes > r.PeakRSSBytes || len(r.Series) == 0 {
			t.Errorf("%s: peak RSS %d (replay %d), %d series points", r.Engine, r.PeakRSSBytes, r.ReplayPeakRSSBytes, len(r.Series))
		}
		// Sozu's log is fsynced at each measured block's boundary; the
		// other engines report no log.
		if measured := r.Classes[report.SetMined].Calls; (r.Engine == "sozu") != (r.LogFsyncs > 0) || r.Engine == "sozu" && (r.LogFsyncs < measured || r.LogFsyncSeconds <= 0) {
			t.Errorf("%s: %d fsyncs of the log (%.3f s) over %d measured blocks", r.Engine, r.LogFsyncs, r.LogFsyncSeconds, measured)
		}
		if r.Engine == "pebble" && (r.DiskBytes == 0 || r.VsPebble["store_time"] != 1) {
			t.Errorf("pebble: disk %d bytes, ratio to itself %v", r.DiskBytes, r.VsPebble)
		}
	}
	var doc benchOutput
	data, err := os.ReadFile(jsonPath)
	if err != nil || json.Unmarshal(data, &doc) != nil || doc.Reference.Digest != out.Reference.Digest {
		t.Errorf("JSON output unreadable or different: %v", err)
	}
	svg, err := os.ReadFile(chartPath)
	// A line for each engine's measured blocks, and a dashed one for the
	// warm-up that grew the set.
	if err != nil || !strings.HasPrefix(string(svg), "<svg") || strings.Count(string(svg), "<polyline") != 2*len(out.Results) ||
		strings.Count(string(svg), "stroke-dasharray") != len(out.Results) {
		t.Errorf("chart: %v, %d lines", err, strings.Count(string(svg), "<polyline"))
	}
	for _, r := range out.Results {
		if n := len(r.Growth); n == 0 || r.Growth[n-1].Live < 3000 {
			t.Errorf("%s: the warm-up's growth series %+v does not reach the 3000 UTXOs target", r.Engine, r.Growth)
		}
	}
}

// TestBenchBTCFileMatchesImport replays the first 14,132 mainnet blocks:
// the map and the memory engine must both reach import's digest.
func TestBenchBTCFileMatchesImport(t *testing.T) {
	path := filepath.Join(testdata.Dir(t), "btc-mainnet-0-14131.blk")
	if _, err := os.Stat(path); err != nil {
		t.Skip("no BTC block file")
	}
	const importDigest = "d64f9c7ce54f713fb471a852626ac52f6081f20dbc30054f153df09650e398b9"
	out := runBenchArgs(t, "--workload", path, "--engines", "map,memory")
	if out.Reference.Digest != importDigest {
		t.Fatalf("reference digest %s, import's %s", out.Reference.Digest, importDigest)
	}
	if err := out.check(); err != nil {
		t.Fatal(err)
	}
	if out.Workload.FileStats.Mode != "chain" || out.Workload.FileStats.SkippedSpends != 0 {
		t.Errorf("file stats %+v: want a chain with nothing skipped", out.Workload.FileStats)
	}
}

// TestBenchBSVOrphanFiles replays blocks whose parents are absent: spends
// of missing outputs are skipped and counted, and the digests still agree.
func TestBenchBSVOrphanFiles(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(testdata.Dir(t), "bsv-mainnet", "*.bin"))
	if len(paths) == 0 {
		t.Skip("no BSV block files")
	}
	out := runBenchArgs(t, append([]string{"--engines", "pebble,map", "--sync", "block", "--workload", paths[0]}, paths[1:]...)...)
	if err := out.check(); err != nil {
		t.Fatal(err)
	}
	st := out.Workload.FileStats
	if st.Mode != "orphan" || st.SkippedSpends == 0 || out.Results[0].SkippedSpends != uint64(st.SkippedSpends) {
		t.Errorf("file stats %+v, pebble skipped %d", st, out.Results[0].SkippedSpends)
	}
}

// TestBenchIndexMatchesImport: bench --index builds, along the block path,
// the address index that import --index builds from the same chain: the
// synthetic stream's final chain (its reorganisations undone), written as
// a block file and imported, gives an index of the same entries, byte for
// byte, and the store the same UTXO digest. The Electrum columns keep the
// entries of the blocks the stream disconnected, so the replay's hold at
// least the import's.
func TestBenchIndexMatchesImport(t *testing.T) {
	args := []string{"--engines", "memory,map", "--utxos", "3000", "--blocks", "30", "--txs", "40",
		"--reorg-rate", "0.2", "--sync", "block", "--index"}
	out := runBenchArgs(t, args...)
	if err := out.check(); err != nil {
		t.Fatal(err)
	}
	ix := out.Results[0].Index
	if ix == nil || ix.Entries == 0 || ix.Blocks == 0 || ix.Txs <= ix.Blocks || ix.Seconds <= 0 || ix.StoreSeconds <= 0 {
		t.Fatalf("bench --index measured no index: %+v", ix)
	}
	if ix.DiskPerMinimal <= 0 || ix.WriteAmp <= 0 || ix.BlocksPerSecond <= 0 || ix.PerStore <= 0 {
		t.Errorf("derived figures missing: %+v", ix)
	}
	// The warm-up's share: its blocks were indexed, then written, and
	// stored, and the measured blocks after them took time of both too.
	if ix.WarmupSeconds <= 0 || ix.WarmupSeconds >= ix.Seconds || ix.WarmupStoreSeconds <= 0 || ix.WarmupStoreSeconds >= ix.StoreSeconds ||
		ix.WarmupPerStore <= 0 || ix.MeasuredPerStore <= 0 {
		t.Errorf("no split of the index's time at the measured blocks: %+v", ix)
	}
	if ix.WarmupFlushSeconds <= 0 || ix.WarmupFlushSeconds >= ix.WarmupSeconds {
		t.Errorf("the index's write of the warm-up's blocks was not timed within the warm-up: %+v", ix)
	}
	if out.Results[0].Classes[report.Disconnect].Calls == 0 {
		t.Fatal("no reorganisation: the stream does not test the index's disconnections")
	}

	// The same stream's final chain, as import reads it.
	cfg, err := parseBench(args)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []*utxo.Block
	_, err = workload.Generate(cfg.synthetic, func(op *workload.Op) error {
		switch op.Kind {
		case workload.Connect:
			blocks = append(blocks[:op.Block.Height], op.Block)
		case workload.Disconnect:
			blocks = blocks[:op.Block.Height]
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	magic, err := chain.NetworkMagic("mainnet")
	if err != nil {
		t.Fatal(err)
	}
	var file []byte
	for _, b := range blocks {
		raw := driver.ChainBlock(b).Serialize()
		file = append(chain.AppendFrameHeader(file, magic, uint64(len(raw))), raw...)
	}
	dir := t.TempDir()
	blk := filepath.Join(dir, "blk00000.dat")
	if err := os.WriteFile(blk, file, 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	stdout, stderr, err := run(t, "import", "--data", data, "--engine", "sozu", "--network", "mainnet", "--sync", "block",
		"--index", "--trust-blocks", "--quiet", blk)
	if err != nil {
		t.Fatalf("import --index: %v\n%s", err, stderr)
	}
	var sum struct{ Digest string }
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || sum.Digest != out.Reference.Digest {
		t.Fatalf("import's digest %q (%v), bench's %s", sum.Digest, err, out.Reference.Digest)
	}
	imported, err := index.Open(filepath.Join(data, "index"), index.Options{Coin: "Bitcoin"})
	if err != nil {
		t.Fatal(err)
	}
	defer imported.Close()
	fp, err := imported.Footprint()
	if err != nil {
		t.Fatal(err)
	}
	if fp.Digest != ix.Digest || fp.Entries != ix.Entries || fp.LiveBytes != ix.LiveBytes {
		t.Fatalf("import --index: %d entries, %d bytes, digest %s; bench --index: %d entries, %d bytes, digest %s",
			fp.Entries, fp.LiveBytes, fp.Digest, ix.Entries, ix.LiveBytes, ix.Digest)
	}
	if fp.ElectrumBytes == 0 || ix.ElectrumBytes < fp.ElectrumBytes {
		t.Fatalf("Electrum columns: import --index %d bytes, bench --index %d", fp.ElectrumBytes, ix.ElectrumBytes)
	}
}

// TestBenchSnapshot: with --snapshot, each engine that keeps its files
// has its final set dumped and loaded by the snapshot commands (the load
// refused unless it gives the dump's statistics), with the set's size
// and both timings in its result and a row in the snapshot table; the
// map and the memory engine have none.
func TestBenchSnapshot(t *testing.T) {
	out := runBenchArgs(t, "--engines", "sozu,pebble,memory,map", "--blocks", "20", "--utxos", "3000", "--txs", "40", "--sync", "block", "--snapshot")
	if err := out.check(); err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Results {
		s := r.Snapshot
		switch {
		case r.Engine == "sozu" || r.Engine == "pebble":
			if s == nil || s.Coins == 0 || s.Coins > r.Utxos || s.FileBytes == 0 || s.DumpSeconds <= 0 || s.LoadSeconds <= 0 {
				t.Errorf("%s: snapshot %+v of a set of %d UTXOs", r.Engine, s, r.Utxos)
			}
		case s != nil:
			t.Errorf("%s has a snapshot: %+v", r.Engine, s)
		}
	}
	var table strings.Builder
	if err := report.WriteSnapshotTable(&table, out.Results); err != nil {
		t.Fatal(err)
	}
	if rows := strings.Count(table.String(), "\n") - 2; rows != 2 {
		t.Fatalf("the snapshot table has %d rows:\n%s", rows, table.String())
	}
}

func TestBenchRefusesUnknownEngine(t *testing.T) {
	if _, err := parseBench([]string{"--engines", "pebble,nosuch"}); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("err = %v", err)
	}
}

// --txs above the default cut of the draw (2,000) is a bigger block, not a
// refused workload shape.
func TestBenchTakesBlocksOfTenThousandTxs(t *testing.T) {
	cfg, err := parseBench([]string{"--txs", "10000", "--clients", "4"})
	if err != nil {
		t.Fatal(err)
	}
	if txs := cfg.synthetic.TxsPerBlock; txs.Mean != 10000 || float64(txs.Max) < txs.Mean {
		t.Fatalf("--txs 10000 gave %+v", txs)
	}
	if cfg.clients != 4 {
		t.Fatalf("--clients 4 gave %d", cfg.clients)
	}
	// --txs is the blocks' mean size, whatever its value.
	for _, txs := range []string{"1000", "2000", "10000"} {
		cfg, err := parseBench([]string{"--txs", txs})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		const blocks = 20000
		total := 0
		for range blocks {
			total += cfg.synthetic.TxsPerBlock.Sample(rng)
		}
		want, _ := strconv.ParseFloat(txs, 64)
		if mean := float64(total) / blocks; math.Abs(mean-want) > 0.03*want {
			t.Errorf("--txs %s gives blocks of %.0f transactions on average", txs, mean)
		}
	}
	if _, err := parseBench([]string{"--clients", "0"}); err == nil {
		t.Fatal("--clients 0 accepted")
	}
}

// Engine redis replays into a namespace of the run's own, and the run
// removes it from the cluster when the replay ends, whether it passed
// (here in a child process) or failed (here in-process: no replica can
// acknowledge nine copies, so opening the store fails after writing its
// layout).
func TestBenchRemovesItsRedisNamespace(t *testing.T) {
	addrs := os.Getenv("UTXOSTORE_REDIS_ADDRS")
	if addrs == "" {
		t.Skip("UTXOSTORE_REDIS_ADDRS is not set")
	}
	for _, tc := range []struct {
		name   string
		args   []string
		passes bool
	}{
		{"passed", nil, true},
		{"failed", []string{"--in-process", "--redis-wait", "9"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := "benchtest-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			cfg, err := parseBench(append([]string{"--engines", "redis,map", "--blocks", "5", "--utxos", "500", "--txs", "20",
				"--sync", "always", "--redis", addrs, "--redis-namespace", ns}, tc.args...))
			if err != nil {
				t.Fatal(err)
			}
			cfg.exe = utxostoreBin
			out, err := runBenchConfig(context.Background(), cfg, testlog.Logger(t))
			if err != nil {
				t.Fatal(err)
			}
			if passed := out.check() == nil; passed != tc.passes {
				t.Fatalf("the redis replay passed: %v, want %v (%+v)", passed, tc.passes, out.Results[0].Err)
			}
			if keys := redisKeys(t, strings.Split(addrs, ","), ns+"*"); len(keys) > 0 {
				t.Errorf("%d keys of the run left in the cluster, e.g. %q", len(keys), keys[0])
			}
		})
	}
}

// redisKeys lists the keys matching pattern on every master of the cluster.
func redisKeys(t *testing.T, addrs []string, pattern string) []string {
	t.Helper()
	ctx := context.Background()
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs})
	defer c.Close()
	var mu sync.Mutex
	var keys []string
	err := c.ForEachMaster(ctx, func(ctx context.Context, n *goredis.Client) error {
		iter := n.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			keys = append(keys, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestBenchProfileWritesItsFiles: --profile leaves, per engine and for the
// map, the CPU profile of the measured blocks and the allocation profiles
// of the warm-up and of the whole replay, each a gzipped pprof file.
func TestBenchProfileWritesItsFiles(t *testing.T) {
	dir := t.TempDir()
	out := runBenchArgs(t, "--engines", "memory,map", "--blocks", "10", "--utxos", "1000", "--txs", "20", "--sync", "block", "--profile", dir)
	if err := out.check(); err != nil {
		t.Fatal(err)
	}
	for _, engine := range []string{"memory", mapEngine} {
		for _, kind := range []string{"cpu", "allocs-warmup", "allocs"} {
			path := filepath.Join(dir, engine+"."+kind+".pprof")
			data, err := os.ReadFile(path)
			if err != nil || len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
				t.Errorf("%s: not a gzipped profile (%d bytes, %v)", path, len(data), err)
			}
		}
	}
}

// TestBenchSetStatsReference: with --reference set-stats no map runs;
// every engine, in its own child process, ends its replay with the set
// statistics it keeps instead of a walk, and they must be those the
// generator kept of the chain's set. A map in --engines, block files and
// an unknown reference are refused.
func TestBenchSetStatsReference(t *testing.T) {
	out := runBenchArgs(t, "--engines", "memory,sozu", "--blocks", "30", "--utxos", "3000", "--txs", "40",
		"--reorg-rate", "0.2", "--sync", "block", "--reference", "set-stats")
	if err := out.check(); err != nil {
		t.Fatal(err)
	}
	set := out.Workload.Synthetic.Set
	if set == nil || set.TxOuts == 0 || out.Reference.Digest != set.MuHash || out.Reference.MinimalBytes == 0 {
		t.Fatalf("reference %s, the generator's statistics %+v", out.Reference.Digest, set)
	}
	for _, r := range out.Results {
		if r.Engine == mapEngine || !r.DigestOK || r.Utxos != set.TxOuts || r.Satoshis != set.TotalAmount {
			t.Errorf("%s: digest %s (ok %v), %d txouts, %d sat", r.Engine, r.Digest, r.DigestOK, r.Utxos, r.Satoshis)
		}
		if r.Engine == "sozu" && r.DiskPerMinimal == 0 {
			t.Errorf("sozu: no disk/minimal (disk %d bytes, minimal %d)", r.DiskBytes, out.Reference.MinimalBytes)
		}
	}
	for _, args := range [][]string{
		{"--reference", "set-stats", "--engines", "sozu,map"},
		{"--reference", "set-stats", "--workload", "chain.blk"},
		{"--reference", "walk"},
	} {
		if _, err := parseBench(args); err == nil {
			t.Errorf("bench %v was not refused", args)
		}
	}
}

// TestBenchCrashResumesToTheReference kills Sozu's replay with SIGKILL
// where its log is longest (within a block of its ckptlog), reopens the
// store and finishes the stream on it: the final set must still be the
// map's, so the reopen lost no acknowledged write and the resumption took
// up exactly where the kill left off.
func TestBenchCrashResumesToTheReference(t *testing.T) {
	const ckptlog = 4 << 20
	tuning := "ckptlog=" + strconv.Itoa(ckptlog)
	out := runBenchArgs(t, "--engines", "sozu,map", "--blocks", "40", "--utxos", "20000", "--txs", "300",
		"--sync", "always", "--clients", "8", "--crash", "--sozu-tuning", tuning)
	if err := out.check(); err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	if err := report.WriteRecoveryTable(&table, out.Results); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())
	for _, r := range out.Results {
		if r.Engine != "sozu" {
			continue
		}
		c := r.Recovery
		switch {
		case c == nil:
			t.Fatal("sozu: no recovery")
		case c.AppliedOps <= 0 || c.AppliedOps >= out.Workload.Ops || c.LiveUTXOs == 0:
			t.Errorf("killed after %d of %d operations, %d live UTXOs", c.AppliedOps, out.Workload.Ops, c.LiveUTXOs)
		case c.CheckpointLogBytes != ckptlog || c.LogBytes < ckptlog/2 || c.LogBytes > ckptlog:
			t.Errorf("log %d bytes at the kill, bound %d", c.LogBytes, c.CheckpointLogBytes)
		case c.OpenSeconds <= 0 || c.ReplayedRecords == 0 || c.ReplayedBytes == 0:
			t.Errorf("reopen %.3f s replayed %d records, %d bytes", c.OpenSeconds, c.ReplayedRecords, c.ReplayedBytes)
		}
	}

	// A log bound the measured blocks never near leaves no crash point:
	// the run fails rather than report a kill that did not happen.
	out = runBenchArgs(t, "--engines", "sozu", "--blocks", "3", "--utxos", "2000", "--txs", "50", "--crash",
		"--sozu-tuning", "ckptlog=1073741824")
	if err := out.check(); err == nil || !strings.Contains(err.Error(), "ckptlog") {
		t.Errorf("a crash point never reached: %v", err)
	}

	for _, args := range [][]string{
		{"--crash", "--engines", "sozu,pebble"},
		{"--crash", "--engines", "memory"},
		{"--crash", "--engines", "sozu", "--in-process"},
		{"--crash", "--engines", "sozu", "--snapshot"},
		{"--crash", "--engines", "sozu", "--index"},
	} {
		if _, err := parseBench(args); err == nil {
			t.Errorf("bench %v was not refused", args)
		}
	}
}
