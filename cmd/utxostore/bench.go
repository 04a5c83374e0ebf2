package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/utxostore/utxostore/bench/driver"
	"github.com/utxostore/utxostore/bench/report"
	"github.com/utxostore/utxostore/bench/workload"
	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/engine/redis"
	"github.com/utxostore/utxostore/engine/sozu"
	"github.com/utxostore/utxostore/internal/sysstat"
	"github.com/utxostore/utxostore/utxo"
)

const benchHelp = `Usage: utxostore bench [flags] [FILE...]

Generates one operation stream, replays it against every engine listed in
--engines (each in a child process of its own, on a fresh temporary data
directory, so that peak RSS and I/O are per engine; engine redis on a
namespace of its own, <--redis-namespace>-bench-<pid>, removed from the
cluster when its replay ends) and against "map", a plain Go map with no
durability (the physical reference). It prints a
Markdown table; --json and --chart write the full results and an SVG of
throughput over the growing live set.

Every engine's final UTXO digest (utxo.Summary) must equal the map
reference's: the command fails, naming the engines, if one differs. For a
set the map cannot hold in memory, --reference set-stats runs no map: the
generator keeps Bitcoin Core's statistics of the synthetic chain's set
(txouts, total_amount, muhash; about 3 µs per output created or spent),
and every engine must end with the same ones, which the store keeps block
by block (SetStats), so that no walk holds the set in memory either.

With --index every engine's blocks go along the block path as import
--index takes them: checked (as with --trust-blocks, and with no limit on
a block's size, since the warm-up's blocks are larger than Bitcoin's),
kept in a block store, connected to the store and connected to
Blockbook's address index, in bulk as import writes it; the warm-up
ends with the index's write of what it holds. A second table gives the
index's rates, its time beside the store's, its disk size over its live
keys and values, and its write amplification.

With --crash, engine sozu's replay is killed with SIGKILL at the
measured block boundary where its log holds the most it keeps before a
page checkpoint (Sozu's ckptlog); its store is opened again, timed, and
the rest of the stream is replayed on it, so the final check also proves
that the reopen lost no acknowledged write. A second table gives the log
at the kill, the reopen's time and replay rate, and the reopen a whole
ckptlog would take at that rate.

Workloads: --workload synthetic (the default; --seed, --blocks, --utxos,
--txs shape it) or block files (--workload FILE, more FILEs as arguments):
a chain from genesis is replayed like import, files whose blocks miss their
ancestors with Create + Spend per transaction, skipping (and counting) the
inputs whose parents were never seen. See BENCHMARKS.md for the method.

Flags:
`

// mapEngine is the map reference's name in --engines.
const mapEngine = "map"

// benchConfig is a parsed bench command line.
type benchConfig struct {
	engines   []string
	files     []string
	synthetic workload.Config
	jsonPath  string
	chartPath string
	dir       string
	profile   string
	clients   int
	inProcess bool
	// snapshot dumps each engine's final set and loads it (--snapshot).
	snapshot bool
	// crash kills each engine's replay and resumes it on the reopened
	// store (--crash).
	crash bool
	// setStats checks each engine against the statistics the generator
	// kept of the chain's set, not against the map (--reference).
	setStats bool
	sf       storeFlags
	// exe is the utxostore binary that runs each engine's child (bench
	// --child): this one, unless a test names the binary it built.
	exe string
}

// runBench runs the benchmark, or with --child first (a flag its help
// leaves out: benchChild passes it) one engine's replay in a child process.
func runBench(ctx context.Context, args []string) error {
	if len(args) > 0 && (args[0] == "--child" || args[0] == "-child") {
		return runBenchChild(ctx, args[1:])
	}
	cfg, err := parseBench(args)
	if err != nil {
		return err
	}
	out, err := runBenchConfig(ctx, cfg, cfg.sf.log())
	if err != nil {
		return err
	}
	if err := report.WriteTable(os.Stdout, out.Results); err != nil {
		return err
	}
	if cfg.snapshot {
		fmt.Println()
		if err := report.WriteSnapshotTable(os.Stdout, out.Results); err != nil {
			return err
		}
	}
	if cfg.crash {
		fmt.Println()
		if err := report.WriteRecoveryTable(os.Stdout, out.Results); err != nil {
			return err
		}
	}
	return out.check()
}

func parseBench(args []string) (*benchConfig, error) {
	fs := newFlagSet("bench", benchHelp)
	cfg := &benchConfig{synthetic: workload.DefaultConfig()}
	// The store flags that make sense for a benchmark are shared with the
	// other commands (same names, defaults and environment); --engine and
	// --data are not, since bench picks both per engine.
	sfs := flag.NewFlagSet("store", flag.ContinueOnError)
	cfg.sf.register(sfs)
	for _, name := range []string{"sync", "network", "redis", "redis-namespace", "redis-wait", "batch-wait", "batch-ops", "sozu-tuning"} {
		f := sfs.Lookup(name)
		fs.Var(f.Value, name, f.Usage)
	}
	engineList := fs.String("engines", "", "comma-separated engines to compare, "+mapEngine+" included: "+strings.Join(append(engineNames(), mapEngine), ", ")+" (default: sozu, pebble, memory and map, and redis when --redis is given)")
	wl := fs.String("workload", "synthetic", `"synthetic", or block files (comma-separated; more as arguments)`)
	seed := fs.Uint64("seed", cfg.synthetic.Seed, "seed of the synthetic chain (and of the double spends and reads added to block files)")
	fs.IntVar(&cfg.synthetic.Blocks, "blocks", cfg.synthetic.Blocks, "measured blocks of the synthetic chain")
	fs.IntVar(&cfg.synthetic.TargetUTXOs, "utxos", cfg.synthetic.TargetUTXOs, "live UTXOs the warm-up grows to before measuring (the set then stays about there)")
	fs.Float64Var(&cfg.synthetic.TxsPerBlock.Mean, "txs", cfg.synthetic.TxsPerBlock.Mean, "mean transactions per synthetic block")
	fs.Float64Var(&cfg.synthetic.ReorgRate, "reorg-rate", cfg.synthetic.ReorgRate, "probability of a reorg after a measured block")
	fs.Float64Var(&cfg.synthetic.DoubleSpendsPerBlock, "double-spends", cfg.synthetic.DoubleSpendsPerBlock, "double-spend attempts per measured block")
	fs.StringVar(&cfg.jsonPath, "json", "", "write the full results as JSON to this file")
	fs.StringVar(&cfg.chartPath, "chart", "", "write an SVG chart of throughput vs live UTXOs to this file: the measured blocks, and dashed the warm-up that grows the set from 0")
	fs.StringVar(&cfg.dir, "dir", "", "parent directory of the temporary data directories (default: the system's)")
	fs.IntVar(&cfg.clients, "clients", 1, "goroutines submitting transactions concurrently to each engine, as a validator's workers do: each takes the next transaction whose parents in its block are created (the map reference submits one at a time)")
	fs.StringVar(&cfg.profile, "profile", "", "write each engine's CPU profile of the measured blocks (ENGINE.cpu.pprof) and allocation profiles of the warm-up and the whole replay (ENGINE.allocs-warmup.pprof, ENGINE.allocs.pprof) to this directory")
	fs.BoolVar(&cfg.sf.index, "index", false, "feed every engine's blocks along the block path into a block store and Blockbook's address index, as import --index does, and report the index's figures")
	cfg.sf.registerIndexCache(fs)
	fs.BoolVar(&cfg.snapshot, "snapshot", false, "after each engine's replay (engines sozu and pebble), dump its final set as a Core snapshot with 'utxostore snapshot dump' and load the file into a new store with 'snapshot load', and print the rates, in coins of the set per second, of the replay that built it, the dump and the load")
	fs.BoolVar(&cfg.crash, "crash", false, "kill engine sozu's replay with SIGKILL at the measured block boundary where its log holds the most it keeps before a page checkpoint (it fails if the measured blocks end first), reopen the store, timing it, and finish the stream on it: the final set must still equal the reference, and a second table gives the log at the kill, the reopen's time and its replay rate")
	fs.BoolVar(&cfg.inProcess, "in-process", false, "run every engine in this process (peak RSS and I/O are then not per engine)")
	reference := fs.String("reference", referenceMap, `what every engine's final set must equal: "`+referenceMap+`", the map's (a walk of the set, which holds it in memory), or "`+referenceSetStats+`", Bitcoin Core's statistics of the synthetic chain's set (txouts, total_amount, muhash) kept as the chain is generated, against those the store keeps, for a set the map cannot hold`)
	sources, err := parseFlags(fs, args)
	if err != nil {
		return nil, err
	}
	if *engineList == "" {
		*engineList = "sozu,pebble,memory"
		if sources["redis"] != "default" {
			*engineList += ",redis"
		}
		*engineList += "," + mapEngine
	}
	cfg.synthetic.Seed = *seed
	if txs := &cfg.synthetic.TxsPerBlock; float64(txs.Max) < 10*txs.Mean {
		// The draw's cut stays at ten times the mean, where it trims only
		// the far tail: blocks then average --txs transactions (a cut at
		// twice the mean would average 0.69 × --txs).
		txs.Max = int(10 * txs.Mean)
	}
	if cfg.clients < 1 {
		return nil, usagef("--clients must be at least 1")
	}
	switch *reference {
	case referenceMap:
	case referenceSetStats:
		cfg.setStats, cfg.synthetic.SetStats = true, true
	default:
		return nil, usagef("--reference %q: choose %s or %s", *reference, referenceMap, referenceSetStats)
	}
	// Refused here rather than in every child.
	if _, err := cfg.sf.sozuOptions(false); err != nil {
		return nil, err
	}
	if *wl != "synthetic" {
		cfg.files = strings.Split(*wl, ",")
	}
	if fs.NArg() > 0 {
		if cfg.files == nil {
			return nil, usagef("block files given as arguments need --workload FILE (the first of them)")
		}
		cfg.files = append(cfg.files, fs.Args()...)
	}
	if cfg.setStats && cfg.files != nil {
		return nil, usagef("--reference %s needs the synthetic workload: the generator keeps the statistics", referenceSetStats)
	}
	if cfg.crash && (cfg.inProcess || cfg.snapshot || cfg.sf.index) {
		return nil, usagef("--crash kills a child process replaying the store alone: it runs without --in-process, --snapshot and --index")
	}
	seen := map[string]bool{}
	for _, name := range strings.Split(*engineList, ",") {
		name = strings.TrimSpace(name)
		if cfg.crash && name != "sozu" && name != mapEngine {
			return nil, usagef("--crash measures engine sozu's recovery: list only sozu (and %s) in --engines, not %q", mapEngine, name)
		}
		if _, ok := engines[name]; !ok && name != mapEngine {
			return nil, usagef("unknown engine %q: choose among %s, %s", name, strings.Join(engineNames(), ", "), mapEngine)
		}
		if name == mapEngine && cfg.setStats {
			return nil, usagef("--reference %s leaves the map out: drop it from --engines", referenceSetStats)
		}
		if !seen[name] {
			seen[name] = true
			cfg.engines = append(cfg.engines, name)
		}
	}
	return cfg, nil
}

// growthStep is the warm-up's growth per point of the growth series, about
// 40 points to the synthetic chain's target (block files have no warm-up).
func (cfg *benchConfig) growthStep() uint64 {
	if cfg.files != nil {
		return 0
	}
	return max(1, uint64(cfg.synthetic.TargetUTXOs)/40)
}

// The references bench checks every engine's final set against.
const (
	referenceMap      = "map"
	referenceSetStats = "set-stats"
)

// benchOutput is the JSON document of a run.
type benchOutput struct {
	Command  string `json:"command"`
	Host     string `json:"host"`
	Workload struct {
		Kind      string              `json:"kind"`
		Files     []string            `json:"files,omitempty"`
		Config    *workload.Config    `json:"config,omitempty"`
		Synthetic *workload.Stats     `json:"synthetic_stats,omitempty"`
		FileStats *workload.FileStats `json:"file_stats,omitempty"`
		Ops       int                 `json:"ops"`
		StreamSHA string              `json:"stream_sha256"`
		// StreamBytes is the size of the stream file, and
		// GeneratorPeakRSSBytes this process's peak RSS after writing it:
		// the generator's, since nothing else has run yet.
		StreamBytes           int64 `json:"stream_bytes"`
		GeneratorPeakRSSBytes int64 `json:"generator_peak_rss_bytes"`
	} `json:"workload"`
	Reference struct {
		Digest       string `json:"digest"`
		Utxos        uint64 `json:"utxos"`
		MinimalBytes uint64 `json:"minimal_bytes"`
	} `json:"reference"`
	Results []*report.EngineResult `json:"results"`
}

// check fails when an engine failed or its digest differs from the map's.
func (o *benchOutput) check() error {
	var bad []string
	for _, r := range o.Results {
		switch {
		case r.Err != "":
			bad = append(bad, fmt.Sprintf("%s failed (%s)", r.Engine, r.Err))
		case !r.DigestOK:
			bad = append(bad, fmt.Sprintf("%s digest %s", r.Engine, r.Digest))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("final UTXO digests differ from the reference %s: %s", o.Reference.Digest, strings.Join(bad, "; "))
	}
	return nil
}

// runBenchConfig generates the stream, computes the reference and runs
// every engine; it writes --json and --chart. Progress goes to log.
func runBenchConfig(ctx context.Context, cfg *benchConfig, log *slog.Logger) (*benchOutput, error) {
	work, err := os.MkdirTemp(cfg.dir, "utxostore-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	out := &benchOutput{Command: "utxostore bench " + strings.Join(os.Args[min(2, len(os.Args)):], " "),
		Host: fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())}
	streamPath := filepath.Join(work, "stream.ops")
	seriesEvery, err := writeStream(cfg, streamPath, out)
	if err != nil {
		return nil, err
	}
	out.Workload.GeneratorPeakRSSBytes = sysstat.PeakRSS()
	log.Info("bench: workload written", "kind", out.Workload.Kind, "ops", out.Workload.Ops, "stream_mib", out.Workload.StreamBytes>>20,
		"stream_sha256", out.Workload.StreamSHA, "generator_peak_rss_mib", out.Workload.GeneratorPeakRSSBytes>>20)

	// The generator's memory is garbage now; hand it back before the
	// engines run beside this process.
	debug.FreeOSMemory()

	run := func(i int, name string) (*report.EngineResult, error) {
		dir := filepath.Join(work, fmt.Sprintf("data-%d-%s", i, name))
		defer os.RemoveAll(dir)
		if name == "redis" {
			defer dropBenchNamespace(ctx, cfg, log)
		}
		if !cfg.inProcess {
			res := benchChild(ctx, name, cfg, dir, streamPath, seriesEvery, filepath.Join(work, name+".json"))
			return res, cfg.measureSnapshot(ctx, res, dir, log)
		}
		opts, stop, err := startProfile(cfg.profile, name, driver.Options{SeriesEvery: seriesEvery, GrowthStep: cfg.growthStep(),
			Clients: cfg.clients, SetStatsDigest: cfg.setStats})
		if err != nil {
			return nil, err
		}
		sf := cfg.sf
		sf.namespace = cfg.redisNamespace()
		res := benchEngine(ctx, name, sf, dir, streamPath, opts, crashPlan{})
		if err := stop(); err != nil {
			return nil, err
		}
		return res, cfg.measureSnapshot(ctx, res, dir, log)
	}
	// The map reference runs first, like an engine (in a process of its
	// own unless --in-process): its digest is the one every engine must
	// reach, and it is the map row when --engines lists the map. With
	// --reference set-stats, the generator's statistics are the reference,
	// and the digest is their MuHash.
	var ref *report.EngineResult
	if cfg.setStats {
		set := out.Workload.Synthetic.Set
		ref = &report.EngineResult{Digest: set.MuHash, Utxos: set.TxOuts, MinimalBytes: out.Workload.Synthetic.SetMinimalBytes}
	} else if ref, err = run(len(cfg.engines), mapEngine); err != nil {
		return nil, err
	}
	if ref.Err != "" {
		return nil, fmt.Errorf("the map reference refused the stream: %s", ref.Err)
	}
	out.Reference.Digest, out.Reference.Utxos, out.Reference.MinimalBytes = ref.Digest, ref.Utxos, ref.MinimalBytes
	log.Info("bench: reference done", "digest", ref.Digest, "utxos", ref.Utxos, "seconds", ref.WallSeconds)

	for i, name := range cfg.engines {
		res := ref
		if name != mapEngine {
			if res, err = run(i, name); err != nil {
				return nil, err
			}
		}
		if res.Err != "" {
			log.Error("bench: engine failed", "engine", name, "seconds", res.WallSeconds, "err", res.Err)
		} else {
			attrs := []any{"engine", name, "seconds", res.WallSeconds, "store_seconds", res.StoreSeconds,
				"stats_wait_seconds", res.StatsWaitSeconds, "warmup_stats_wait_seconds", res.WarmupStatsWaitSeconds}
			if res.LogFsyncs > 0 {
				attrs = append(attrs, "log_fsyncs", res.LogFsyncs, "log_fsync_seconds", res.LogFsyncSeconds)
			}
			log.Info("bench: engine done", attrs...)
		}
		out.Results = append(out.Results, res)
	}
	report.Derive(out.Results, ref.Digest, ref.MinimalBytes)
	if cfg.jsonPath != "" {
		data, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(cfg.jsonPath, append(data, '\n'), 0o644); err != nil {
			return nil, err
		}
	}
	if cfg.chartPath != "" {
		f, err := os.Create(cfg.chartPath)
		if err != nil {
			return nil, err
		}
		err = report.WriteChart(f, out.Results)
		if closeErr := f.Close(); err == nil {
			err = closeErr
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// writeStream generates the workload once into path, hashing it; it
// returns the number of blocks per point of the throughput series (about
// 40 points).
func writeStream(cfg *benchConfig, path string, out *benchOutput) (int, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	h := sha256.New()
	w := workload.NewWriter(io.MultiWriter(f, h))
	var blocks int
	if cfg.files != nil {
		out.Workload.Kind, out.Workload.Files = "files", cfg.files
		st, genErr := workload.FromFiles(cfg.files, cfg.synthetic.Seed, w.Write)
		out.Workload.FileStats, blocks, err = &st, st.Blocks, genErr
	} else {
		out.Workload.Kind, out.Workload.Config = "synthetic", &cfg.synthetic
		st, genErr := workload.Generate(cfg.synthetic, w.Write)
		out.Workload.Synthetic, blocks, err = &st, st.MeasuredBlocks+st.ReorgBlocks, genErr
	}
	if err == nil {
		err = w.Flush()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	out.Workload.Ops, out.Workload.StreamSHA = w.Count(), hex.EncodeToString(h.Sum(nil))
	if fi, statErr := os.Stat(path); statErr == nil {
		out.Workload.StreamBytes = fi.Size()
	}
	return max(1, blocks/40), err
}

func replayStream(ctx context.Context, t driver.Target, path string, opts driver.Options) (*report.EngineResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return driver.Run(ctx, t, workload.NewReader(f), opts)
}

// redisNamespace is the Redis namespace engine redis replays into: one of
// this run's own, so that it starts empty and leaves alone any store in
// --redis-namespace itself.
func (cfg *benchConfig) redisNamespace() string {
	return fmt.Sprintf("%s-bench-%d", cfg.sf.namespace, os.Getpid())
}

// dropBenchNamespace removes the run's Redis namespace once the replay
// into it has ended, passed, failed or interrupted: like the data
// directories, it is scratch. A failure to remove it is reported, not
// fatal: the measurements stand.
func dropBenchNamespace(ctx context.Context, cfg *benchConfig, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	ns := cfg.redisNamespace()
	if err := redis.Drop(ctx, redis.Options{Addrs: strings.Split(cfg.sf.redis, ","), Namespace: ns}); err != nil {
		log.Warn("bench: could not remove the Redis namespace; its keys are left in the cluster", "namespace", ns, "err", err)
	}
}

// benchChild runs one engine in a child process, cfg.exe bench --child,
// and reads its result.
func benchChild(ctx context.Context, name string, cfg *benchConfig, dir, stream string, seriesEvery int, resultPath string) *report.EngineResult {
	exe := cfg.exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return &report.EngineResult{Engine: name, Err: err.Error()}
		}
	}
	args := []string{"bench", "--child", "--engine=" + name, "--data=" + dir, "--stream=" + stream, "--result=" + resultPath,
		"--series-every=" + strconv.Itoa(seriesEvery), "--sync=" + cfg.sf.sync, "--network=" + cfg.sf.network,
		"--redis=" + cfg.sf.redis, "--redis-namespace=" + cfg.redisNamespace(),
		"--redis-wait=" + strconv.Itoa(cfg.sf.redisWait), "--sozu-tuning=" + cfg.sf.sozu, "--profile=" + cfg.profile,
		"--clients=" + strconv.Itoa(cfg.clients), "--batch-ops=" + strconv.Itoa(cfg.sf.batchOps),
		"--index=" + strconv.FormatBool(cfg.sf.index), "--index-cache=" + strconv.FormatInt(cfg.sf.indexCache, 10),
		"--set-stats-digest=" + strconv.FormatBool(cfg.setStats), "--growth-step=" + strconv.FormatUint(cfg.growthStep(), 10)}
	if cfg.sf.batchWait.set { // else each engine's default
		args = append(args, "--batch-wait="+cfg.sf.batchWait.String())
	}
	if cfg.crash && name != mapEngine {
		return crashedChild(ctx, name, args, exe, resultPath+".crash", resultPath)
	}
	return runChild(ctx, name, exec.CommandContext(ctx, exe, args...), resultPath)
}

// runChild runs a child, cmd, and reads its result from resultPath.
func runChild(ctx context.Context, name string, cmd *exec.Cmd, resultPath string) *report.EngineResult {
	cmd.Stderr = os.Stderr
	runErr := cmd.Run()
	data, err := os.ReadFile(resultPath)
	if err != nil {
		msg := fmt.Sprintf("child process: %v", runErr)
		if runErr == nil {
			msg = "child process left no result: " + err.Error()
		}
		return &report.EngineResult{Engine: name, Err: msg}
	}
	var res report.EngineResult
	if err := json.Unmarshal(data, &res); err != nil {
		return &report.EngineResult{Engine: name, Err: "reading the child's result: " + err.Error()}
	}
	return &res
}

// runBenchChild is the child side: replay the stream on one engine and
// write the result, failures included, as JSON.
func runBenchChild(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench --child", flag.ContinueOnError)
	var sf storeFlags
	sf.register(fs)
	sf.registerIndex(fs)
	stream := fs.String("stream", "", "operation stream")
	result := fs.String("result", "", "result file")
	seriesEvery := fs.Int("series-every", 1, "blocks per series point")
	profile := fs.String("profile", "", "profile directory")
	clients := fs.Int("clients", 1, "concurrent submitters")
	setStatsDigest := fs.Bool("set-stats-digest", false, "end with the set statistics, not a Summary (--reference set-stats)")
	growthStep := fs.Uint64("growth-step", 0, "UTXOs per point of the warm-up's growth series")
	var crash crashPlan
	fs.StringVar(&crash.killFile, "crash-file", "", "kill this process at the crash point, noted in this file first (bench --crash)")
	fs.StringVar(&crash.resumeFile, "resume-from", "", "reopen the store a kill left and resume the replay from the crash point noted in this file")
	// Every setting is the parent's, on the command line benchChild
	// writes: the environment was read once, by the parent (parseBench).
	if err := fs.Parse(args); err != nil {
		return err
	}
	opts, stop, err := startProfile(*profile, sf.engine, driver.Options{SeriesEvery: *seriesEvery, GrowthStep: *growthStep,
		Clients: *clients, SetStatsDigest: *setStatsDigest})
	if err != nil {
		return err
	}
	res := benchEngine(ctx, sf.engine, sf, sf.data, *stream, opts, crash)
	if err := stop(); err != nil {
		return err
	}
	data, err := json.Marshal(res)
	if err != nil {
		return err
	}
	if err := os.WriteFile(*result, data, 0o644); err != nil {
		return err
	}
	if res.Err != "" {
		return errors.New(res.Err)
	}
	return nil
}

// benchEngine replays the stream on one engine (or the map) over a fresh
// data directory, or resumes it as crash says, and measures it. Failures
// are reported in the result.
func benchEngine(ctx context.Context, name string, sf storeFlags, dir, stream string, opts driver.Options, crash crashPlan) *report.EngineResult {
	io0 := sysstat.ReadIO()
	device0, deviceOK := sysstat.DeviceWrites(dir)
	res, err := replayEngine(ctx, name, sf, dir, stream, opts, crash)
	if err != nil {
		return &report.EngineResult{Engine: name, Err: err.Error()}
	}
	io1 := sysstat.ReadIO()
	res.Engine = name
	res.DeviceWriteBytes, res.SyscallWriteBytes = io1.WriteBytes-io0.WriteBytes, io1.WChar-io0.WChar
	if device1, ok := sysstat.DeviceWrites(dir); ok && deviceOK {
		res.DeviceWriteBytes = device1 - device0
	}
	// The kernel raises VmHWM lazily, from the RSS it sees at times: a
	// later reading can miss a peak an earlier one saw.
	res.PeakRSSBytes = max(sysstat.PeakRSS(), res.ReplayPeakRSSBytes)
	if size, err := sysstat.DirSize(dir); err == nil {
		res.DiskBytes = size
		if ix := res.Index; ix != nil {
			res.DiskBytes -= ix.DiskBytes + ix.BlockStoreBytes // the store's alone
		}
	}
	return res
}

func replayEngine(ctx context.Context, name string, sf storeFlags, dir, stream string, opts driver.Options, crash crashPlan) (*report.EngineResult, error) {
	if name == mapEngine {
		opts.Clients = 1 // the reference is one plain map
		ref := driver.NewMap()
		res, err := replayStream(ctx, ref, stream, opts)
		if err != nil {
			return nil, err
		}
		res.MinimalBytes = ref.MinimalBytes()
		return res, nil
	}
	sf.engine, sf.data = name, dir
	if sf.index {
		return replayPath(ctx, sf, stream, opts)
	}
	var store *utxo.DB
	var recovery *report.RecoveryResult
	var err error
	if crash.resumeFile != "" {
		store, recovery, opts, err = reopenCrashed(ctx, sf, crash.resumeFile, opts)
	} else {
		store, err = sf.open(ctx, createStore)
	}
	if err != nil {
		return nil, err
	}
	if crash.killFile != "" {
		if opts.AfterBlock, err = crashAt(ctx, store, crash.killFile); err != nil {
			store.Close()
			return nil, err
		}
	}
	opts, fsyncs := countLogFsyncs(ctx, store, opts)
	res, err := replayStream(ctx, driver.Store{DB: store}, stream, opts)
	if err == nil {
		res.LogFsyncs, res.LogFsyncSeconds = fsyncs()
	}
	if closeErr := store.Close(); err == nil && closeErr != nil {
		err = fmt.Errorf("closing: %w", closeErr)
	}
	if err == nil && crash.killFile != "" {
		err = errors.New("--crash: the measured blocks ended before the store's log neared its page checkpoint bound (ckptlog): measure more --blocks, or set a smaller ckptlog with --sozu-tuning")
	}
	if res != nil {
		res.Recovery = recovery
	}
	return res, err
}

// countLogFsyncs, on engine sozu, has the replay count the log's fsyncs
// over the measured blocks: the returned options note the counters when
// the measured blocks begin, and fsyncs returns how many there were since
// and the seconds they took (zero on other engines).
func countLogFsyncs(ctx context.Context, store *utxo.DB, opts driver.Options) (driver.Options, func() (uint64, float64)) {
	eng, ok := sozuEngine(store)
	if !ok {
		return opts, func() (uint64, float64) { return 0, 0 }
	}
	var start sozu.Stats
	onMeasure := opts.OnMeasure
	opts.OnMeasure = func() {
		if onMeasure != nil {
			onMeasure()
		}
		start, _ = eng.Stats(ctx) // a failed read leaves zero: the count then includes the warm-up's
	}
	return opts, func() (uint64, float64) {
		end, err := eng.Stats(ctx)
		if err != nil {
			return 0, 0
		}
		return end.LogSyncs - start.LogSyncs, (end.LogSyncTime - start.LogSyncTime).Seconds()
	}
}

// replayPath replays the stream with its blocks going along the block
// path into the store, a block store and the address index, opened as
// import --index opens them (openStores, the index written in bulk), and
// measures the index.
func replayPath(ctx context.Context, sf storeFlags, stream string, opts driver.Options) (*report.EngineResult, error) {
	st, err := sf.openStores(ctx, createStore, pathSettings{trustBlocks: true, bulkIndex: flushEvery, maxBlockSize: math.MaxUint64})
	if err != nil {
		return nil, err
	}
	// The warm-up ends with the index's write of what it holds from the
	// warm-up's blocks, as it ends with the store's set statistics caught
	// up: the measured blocks pay for their own writes only.
	var held, warmup blockpath.StepTimes
	var flushErr error
	onMeasure := opts.OnMeasure
	opts.OnMeasure = func() {
		held = st.path.StepTimes()
		flushErr = st.path.Flush()
		warmup = st.path.StepTimes()
		if onMeasure != nil {
			onMeasure()
		}
	}
	res, err := replayStream(ctx, driver.Path{Path: st.path}, stream, opts)
	if err == nil {
		err = flushErr
	}
	if err == nil {
		err = st.path.Close() // the index's last write, timed with the rest
	}
	if err == nil {
		res.Index, err = indexResult(st, res, warmup, warmup.Index-held.Index)
	}
	if closeErr := st.close(); err == nil && closeErr != nil {
		err = fmt.Errorf("closing: %w", closeErr)
	}
	if err != nil {
		return nil, err
	}
	if res.Index.DiskBytes, err = sysstat.DirSize(filepath.Join(sf.data, "index")); err != nil {
		return nil, err
	}
	if res.Index.BlockStoreBytes, err = sysstat.DirSize(filepath.Join(sf.data, "blocks")); err != nil {
		return nil, err
	}
	return res, nil
}

// indexResult is the address index's share of a replay along the path;
// warmup is the path's step times when the measured blocks began, flush
// the part of its index time the write of what the index held took.
func indexResult(st *stores, res *report.EngineResult, warmup blockpath.StepTimes, flush time.Duration) (*report.IndexResult, error) {
	steps := st.path.StepTimes()
	fp, err := st.index.Footprint()
	if err != nil {
		return nil, fmt.Errorf("the address index: %w", err)
	}
	// The store's calls outside the path: submissions and reads, all in
	// the measured part (the warm-up only connects blocks).
	var calls float64
	for _, c := range []report.Class{report.Create, report.Spend, report.Read, report.Reject} {
		calls += res.Classes[c].Seconds
	}
	return &report.IndexResult{Blocks: steps.IndexedBlocks, Txs: steps.IndexedTxs, Seconds: steps.Index.Seconds(),
		StoreSeconds: steps.Store.Seconds() + calls, KeepSeconds: steps.Keep.Seconds(), CheckSeconds: steps.Check.Seconds(),
		WarmupSeconds: warmup.Index.Seconds(), WarmupStoreSeconds: warmup.Store.Seconds(), WarmupFlushSeconds: flush.Seconds(),
		LiveBytes: fp.LiveBytes, ElectrumBytes: fp.ElectrumBytes, Entries: fp.Entries, Digest: fp.Digest,
		CommittedBytes: fp.CommittedBytes, WrittenBytes: fp.WrittenBytes}, nil
}

// startProfile prepares the profiles --profile asks for. The CPU profile
// covers the measured blocks: it starts when the returned options'
// OnMeasure runs, where an allocation profile of the warm-up
// (ENGINE.allocs-warmup.pprof) is also written, so that
// `go tool pprof -diff_base ENGINE.allocs-warmup.pprof ENGINE.allocs.pprof`
// shows the measured blocks' allocations. stop ends the CPU profile and
// writes the allocation profile of the whole replay.
func startProfile(dir, name string, opts driver.Options) (driver.Options, func() error, error) {
	if dir == "" {
		return opts, func() error { return nil }, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return opts, nil, err
	}
	cpu, err := os.Create(filepath.Join(dir, name+".cpu.pprof"))
	if err != nil {
		return opts, nil, err
	}
	var startErr error
	opts.OnMeasure = func() {
		startErr = errors.Join(writeAllocs(filepath.Join(dir, name+".allocs-warmup.pprof")), pprof.StartCPUProfile(cpu))
	}
	return opts, func() error {
		pprof.StopCPUProfile()
		err := errors.Join(startErr, cpu.Close())
		return errors.Join(err, writeAllocs(filepath.Join(dir, name+".allocs.pprof")))
	}, nil
}

// writeAllocs writes the allocation profile so far to path.
func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(pprof.Lookup("allocs").WriteTo(f, 0), f.Close())
}

// measureSnapshot, with --snapshot, dumps the final set of the engine's
// replay in the data directory dir as a Core snapshot and loads the file
// into a new store beside it, each with the utxostore command as a user
// runs it, timing the whole command; the load must give the dump's
// statistics.
func (cfg *benchConfig) measureSnapshot(ctx context.Context, res *report.EngineResult, dir string, log *slog.Logger) error {
	if !cfg.snapshot || res.Err != "" || !keepsDataInDir(res.Engine) {
		return nil
	}
	exe := cfg.exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return err
		}
	}
	file, loaded := dir+".utxo", dir+"-loaded"
	defer os.Remove(file)
	defer os.RemoveAll(loaded)
	snapshot := func(args ...string) (snapshotResult, float64, error) {
		var out snapshotResult
		cmd := exec.CommandContext(ctx, exe, append([]string{"snapshot"}, args...)...)
		cmd.Stderr = os.Stderr
		start := time.Now()
		stdout, err := cmd.Output()
		seconds := time.Since(start).Seconds()
		if err != nil {
			return out, 0, fmt.Errorf("snapshot %s: %w", args[0], err)
		}
		lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
		return out, seconds, json.Unmarshal([]byte(lines[len(lines)-1]), &out)
	}
	dump, dumpSeconds, err := snapshot("dump", "--format", formatCore, "--data", dir, file)
	if err != nil {
		return err
	}
	// The store of the replay was created on --network, or the default.
	network := cmp.Or(cfg.sf.network, defaultNetwork)
	load, loadSeconds, err := snapshot("load", "--format", formatCore, "--engine", res.Engine, "--data", loaded,
		"--height", strconv.FormatUint(uint64(dump.BaseHeight), 10), "--network", network, "--sync", cfg.sf.sync, file)
	if err != nil {
		return err
	}
	if load.Summary != dump.Summary {
		return fmt.Errorf("bench --snapshot: engine %s: the loaded set's statistics %+v are not the dump's %+v", res.Engine, load.Summary, dump.Summary)
	}
	st, err := os.Stat(file)
	if err != nil {
		return err
	}
	res.Snapshot = &report.SnapshotResult{Coins: dump.TxOuts, FileBytes: st.Size(), DumpSeconds: dumpSeconds, LoadSeconds: loadSeconds}
	log.Info("bench: snapshot done", "engine", res.Engine, "coins", dump.TxOuts, "dump_seconds", dumpSeconds, "load_seconds", loadSeconds)
	return nil
}
