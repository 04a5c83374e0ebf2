package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/utxostore/utxostore/blob"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/engine/pebble"
	"github.com/utxostore/utxostore/engine/redis"
	"github.com/utxostore/utxostore/engine/sozu"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/utxo"
)

// defaultEngine and defaultNetwork are those of a new store when --engine
// or --network is not given; an existing store is opened with its own.
const (
	defaultEngine  = "sozu"
	defaultNetwork = "mainnet"
)

// storeFlags are the flags of every command that opens a store.
type storeFlags struct {
	engine    string
	data      string
	sync      string
	network   string
	redis     string
	namespace string
	redisWait int
	// madeNamespace is set once engine redis opened a namespace it made.
	madeNamespace bool
	verbose       bool
	// logger is the command's logger (log): serve's and demo's in
	// --log-format, text lines on stderr for the others.
	logger *slog.Logger
	index  bool
	// indexCache is --index-cache, the address index's block cache.
	indexCache int64
	blocks     blockFlags
	sozu       string
	batchWait  batchWaitFlag
	batchOps   int
	// unminedRetention is --unmined-retention (sync and serve); 0 leaves
	// the store's default.
	unminedRetention uint32
	// discardCorruptLog is --discard-corrupt-log: a salvage for one run,
	// taken from the command line only (commandLineOnly).
	discardCorruptLog bool
}

// registerIndex adds --index, for the commands that feed or serve the
// address index (import, serve, demo).
func (f *storeFlags) registerIndex(fs *flag.FlagSet) {
	fs.BoolVar(&f.index, "index", false, "keep the Blockbook address index (data format 5) in DATA/index and the raw blocks in DATA/blocks, fed by the same blocks, and serve Blockbook's API from them")
	f.registerIndexCache(fs)
	f.blocks.register(fs)
}

// registerIndexCache adds --index-cache.
func (f *storeFlags) registerIndexCache(fs *flag.FlagSet) {
	fs.Int64Var(&f.indexCache, "index-cache", index.DefaultCacheSize, "`bytes` of the address index's block cache (with --index): it holds the index's bloom filters and recent table blocks, so a block's address lookups seldom read the index's files; memory beside the store's own (0: the default)")
}

// defaultUnminedRetention is the store's own default
// (utxo.Options.UnminedRetention: half of its block height retention).
const defaultUnminedRetention = utxo.DefaultBlockHeightRetention / 2

// registerUnminedRetention adds --unmined-retention, for the commands that
// store a node's unconfirmed transactions (sync, serve).
func (f *storeFlags) registerUnminedRetention(fs *flag.FlagSet) {
	f.unminedRetention = defaultUnminedRetention
	fs.Var((*blockCount)(&f.unminedRetention), "unmined-retention", "`blocks` an unmined transaction is kept: the block after them removes it and frees the outputs it spent (the store's cleanup of old unmined transactions). Match the node's mempool expiry (bitcoind's 336 hours are about 2016 blocks) so the store forgets what the node evicts. Fully spent and conflicting transactions are kept this plus 144 blocks when that is above 288: a transaction an unmined one spends must outlast it")
}

// blockCount is a flag of a number of blocks, at least one.
type blockCount uint32

func (b *blockCount) String() string { return strconv.FormatUint(uint64(*b), 10) }

func (b *blockCount) Set(v string) error {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil || n == 0 {
		return fmt.Errorf("want a number of blocks from 1 to %d, got %q", uint32(math.MaxUint32), v)
	}
	*b = blockCount(n)
	return nil
}

// openIndex opens the address index when --index asks for it (nil
// otherwise). Its coin name follows the network, so an index of another
// network is refused like the store.
func (f *storeFlags) openIndex() (*index.Index, error) {
	if !f.index {
		return nil, nil
	}
	network, err := chain.LookupNetwork(f.network)
	if err != nil {
		return nil, err
	}
	coin := network.Coin
	idx, err := index.Open(filepath.Join(f.data, "index"), index.Options{Coin: coin, NoSync: f.sync == "block", CacheSize: f.indexCache})
	if err != nil {
		return nil, fmt.Errorf("opening the address index: %w", err)
	}
	return idx, nil
}

// log is the command's one logger: the one serve and demo built from
// --log-format, or text lines on stderr.
func (f *storeFlags) log() *slog.Logger {
	if f.logger == nil {
		f.logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return f.logger
}

// engineLogger passes an engine's own messages to the command's logger:
// all of them with --verbose, and otherwise only warnings and errors (a
// log tail cut at recovery, a store past its memory budget). The rest
// (pebble's log replay reports, for instance) come on every open and would
// bury the command's output.
func (f *storeFlags) engineLogger() *slog.Logger {
	h := f.log().Handler()
	if !f.verbose {
		h = warningsOf{h}
	}
	return slog.New(h)
}

// warningsOf passes a handler's records of level Warn and above only.
type warningsOf struct{ slog.Handler }

func (w warningsOf) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelWarn && w.Handler.Enabled(ctx, level)
}

func (w warningsOf) WithAttrs(attrs []slog.Attr) slog.Handler {
	return warningsOf{w.Handler.WithAttrs(attrs)}
}

func (w warningsOf) WithGroup(name string) slog.Handler {
	return warningsOf{w.Handler.WithGroup(name)}
}

func (f *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.engine, "engine", "", "storage engine: "+strings.Join(engineNames(), ", ")+" (default: the data directory's; "+defaultEngine+" for a new store)")
	fs.StringVar(&f.data, "data", defaultDataDir(), "data directory: the one store it holds (its engine's files in DATA/ENGINE, named in DATA/"+storeFile+") and its address index")
	fs.StringVar(&f.sync, "sync", "always", `durability: "always" (every acknowledged write survives a crash) or "block" (durable at block boundaries only; a crash loses the blocks since the last checkpoint, which import then re-applies)`)
	fs.StringVar(&f.network, "network", "", "network the store holds (default: the data directory's; "+defaultNetwork+" for a new store); a store of another network is refused")
	fs.StringVar(&f.redis, "redis", "127.0.0.1:7100", "Redis Cluster node addresses, comma-separated (engine redis)")
	fs.BoolVar(&f.verbose, "verbose", false, "print all of the storage engine's own log messages on stderr (its warnings are printed without it)")
	fs.IntVar(&f.redisWait, "redis-wait", 0, "replicas that must acknowledge writes (Redis WAIT) before they count as durable; 0 relies on the masters' AOF (engine redis)")
	fs.BoolVar(&f.discardCorruptLog, "discard-corrupt-log", false, "engine sozu: open a store whose log is damaged before its end (Open refuses it otherwise) by dropping the log from the damaged write on; the writes logged from there are lost. A torn end is always dropped, and reported")
	fs.StringVar(&f.sozu, "sozu-tuning", "", "tuning of engine sozu, comma-separated name=value settings over the measured defaults (e.g. alpha=0.75,changes=134217728): "+sozu.TuningHelp)
	fs.Var(&f.batchWait, "batch-wait", "with --sync always, merge the writes of concurrent callers into one engine batch (one commit, one Redis round trip per master); while another batch is being written, a batch closes this `duration` after it opens, or at --batch-ops updates; 0 turns merging off (default: "+utxo.DefaultBatchWait.String()+" on engines pebble and redis, 0 on sozu, whose log shares one fsync among concurrent callers by itself, and memory)")
	fs.IntVar(&f.batchOps, "batch-ops", utxo.DefaultBatchOps, "updates at which a merged batch closes early (see --batch-wait)")
	fs.StringVar(&f.namespace, "redis-namespace", "utxostore", "key prefix of the store in Redis, so several stores can share a cluster (engine redis)")
}

func defaultDataDir() string {
	if dir, err := os.UserHomeDir(); err == nil {
		return filepath.Join(dir, ".utxostore")
	}
	return ".utxostore"
}

// opener opens one engine from the flags; readOnly opens an existing
// store without changing it.
type opener func(ctx context.Context, f *storeFlags, sync engine.SyncMode, readOnly bool) (engine.Engine, error)

var engines = map[string]opener{
	"memory": func(context.Context, *storeFlags, engine.SyncMode, bool) (engine.Engine, error) {
		return memory.New(), nil
	},
	"pebble": func(_ context.Context, f *storeFlags, sync engine.SyncMode, readOnly bool) (engine.Engine, error) {
		return pebble.Open(filepath.Join(f.data, "pebble"), pebble.Options{Sync: sync, Logger: f.engineLogger(), ReadOnly: readOnly})
	},
	"sozu": func(_ context.Context, f *storeFlags, sync engine.SyncMode, readOnly bool) (engine.Engine, error) {
		o, err := f.sozuOptions(readOnly)
		if err != nil {
			return nil, err
		}
		o.Sync, o.Logger = sync, f.engineLogger()
		limitMemory(o)
		return openSozu(filepath.Join(f.data, "sozu"), o)
	},
	"redis": func(ctx context.Context, f *storeFlags, sync engine.SyncMode, readOnly bool) (engine.Engine, error) {
		e, err := redis.Open(ctx, f.redisOptions(sync, readOnly))
		var none *redis.NoNamespaceError
		if errors.As(err, &none) {
			return nil, &noRedisStoreError{Namespace: f.namespace}
		}
		if err != nil {
			return nil, err
		}
		f.madeNamespace = e.MadeNamespace()
		return e, nil
	},
}

// batchWaitFlag is --batch-wait: the wait given, or else the engine's
// default (orDefault).
type batchWaitFlag struct {
	wait time.Duration
	set  bool
}

func (b *batchWaitFlag) String() string {
	if !b.set {
		return ""
	}
	return b.wait.String()
}

func (b *batchWaitFlag) Set(s string) error {
	wait, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("not a duration (e.g. 200us, 1ms, 0)")
	}
	if wait < 0 {
		return errors.New("a wait cannot be negative (0 turns merging off)")
	}
	b.wait, b.set = wait, true
	return nil
}

// orDefault is the wait given, or else engineName's: merging concurrent
// callers' writes pays where each engine batch costs a commit or a round
// trip (pebble, redis), and only delays the callers on Sozu, whose log
// already makes the records of every caller it holds durable with one
// fsync, and on memory, which has no fsync to share (BENCHMARKS.md,
// "Durability's cost").
func (b *batchWaitFlag) orDefault(engineName string) time.Duration {
	if b.set {
		return b.wait
	}
	if engineName == pebble.Name || engineName == redis.Name {
		return utxo.DefaultBatchWait
	}
	return 0
}

// redisOptions are the Redis engine's options the flags ask for.
func (f *storeFlags) redisOptions(sync engine.SyncMode, readOnly bool) redis.Options {
	return redis.Options{Addrs: strings.Split(f.redis, ","), Namespace: f.namespace, Sync: sync, Wait: f.redisWait, ReadOnly: readOnly}
}

// sozuOptions are the Sozu options --sozu-tuning and --discard-corrupt-log
// ask for, read-only for a command that only reads; a spec that cannot be
// read is a usage error.
func (f *storeFlags) sozuOptions(readOnly bool) (sozu.Options, error) {
	o, err := sozu.ParseTuning(f.sozu)
	if err != nil {
		return o, usagef("--sozu-tuning: %v", err)
	}
	o.DiscardCorruptLog = f.discardCorruptLog
	o.ReadOnly = readOnly
	if f.index {
		// The process's budget holds the address index too.
		o.MemoryBytes = o.MemoryBudget() + index.HeapAllowance
	}
	return o, nil
}

// openSozu opens the Sozu store in dir; a refusal of a log damaged before
// its end says what --discard-corrupt-log would do about it.
func openSozu(dir string, o sozu.Options) (*sozu.Engine, error) {
	e, err := sozu.Open(dir, o)
	var damaged *sozu.DamagedLogError
	if errors.As(err, &damaged) {
		return nil, fmt.Errorf("%w\nto open the store anyway, dropping the log from the damaged write on (the writes it holds from there are lost), run again with --discard-corrupt-log", err)
	}
	return e, err
}

func engineNames() []string {
	names := make([]string, 0, len(engines))
	for name := range engines {
		names = append(names, name)
	}
	sortStrings(names)
	return names
}

// openMode says whether a command may create the store it opens.
type openMode int

const (
	// existingStore: the command serves or changes a store it did not
	// create; a data directory holding no store is refused.
	existingStore openMode = iota
	// readStore: the command only reads (info, verify, inspect): a data
	// directory holding no store is refused, and the store is opened
	// read-only, so that nothing in it changes.
	readStore
	// createStore: the command creates the store in a data directory
	// holding none (import, serve --create, demo, bench), and names it in
	// the directory's storeFile.
	createStore
	// describeStore: nothing is opened (config); a data directory holding
	// no store leaves the defaults.
	describeStore
)

// resolve settles --engine and --network against the data directory,
// reading it only: left out, they are the directory's store's, or the
// defaults for a new store; given, they must be the store's. It returns
// what the directory holds.
func (f *storeFlags) resolve(mode openMode) (dataDir, error) {
	if _, ok := engines[f.engine]; !ok && f.engine != "" {
		return dataDir{}, usagef("unknown engine %q: choose one of %s", f.engine, strings.Join(engineNames(), ", "))
	}
	if f.engine == "memory" {
		// Nothing of it is kept, in the data directory or anywhere.
		f.network = cmp.Or(f.network, defaultNetwork)
		return dataDir{}, nil
	}
	dir, err := readDataDir(f.data)
	if err != nil {
		return dir, err
	}
	switch {
	case dir.engine == "":
		f.engine = cmp.Or(f.engine, defaultEngine)
		if (mode == existingStore || mode == readStore) && keepsDataInDir(f.engine) {
			return dir, &noStoreError{Dir: f.data, Missing: !dir.exists}
		}
	case f.engine == "":
		f.engine = dir.engine
	case f.engine != dir.engine:
		return dir, &storeMismatchError{Dir: f.data, Flag: "engine", Found: dir.engine, Given: f.engine}
	}
	switch {
	case dir.network == "":
		// A new store.
		f.network = cmp.Or(f.network, defaultNetwork)
	case f.network == "":
		f.network = dir.network
	case f.network != dir.network:
		return dir, &storeMismatchError{Dir: f.data, Flag: "network", Found: dir.network, Given: f.network}
	}
	return dir, nil
}

// open opens the engine and the store over it, after resolve; with
// createStore it names the store in the data directory once it is open.
func (f *storeFlags) open(ctx context.Context, mode openMode) (*utxo.DB, error) {
	dir, err := f.resolve(mode)
	if err != nil {
		return nil, err
	}
	sync, err := engine.ParseSyncMode(f.sync)
	if err != nil {
		return nil, usagef(`unknown --sync %q: use "always" (every write durable) or "block" (durable at block boundaries)`, f.sync)
	}
	readOnly := mode == readStore
	// A store this command creates is named in the data directory once it
	// has opened (so that the name is only ever a store's that exists,
	// with the network its engine confirmed); if its creation fails
	// before then (a full disk), what it made of the engine's directory
	// goes, so that the next command starts the store afresh rather than
	// find files no storeFile names.
	creating := mode == createStore && keepsDataInDir(f.engine) && dir.engine == ""
	engineDir := filepath.Join(f.data, f.engine)
	if creating {
		if _, err := os.Stat(engineDir); !errors.Is(err, os.ErrNotExist) {
			creating = false // not this command's to remove
		}
	}
	failed := func(err error) (*utxo.DB, error) {
		if creating {
			err = errors.Join(err, os.RemoveAll(engineDir))
		}
		return nil, err
	}
	eng, err := engines[f.engine](ctx, f, sync, readOnly)
	var noRedisStore *noRedisStoreError
	if errors.As(err, &noRedisStore) {
		return nil, err
	}
	if err != nil {
		return failed(fmt.Errorf("opening the %s engine: %w", f.engine, err))
	}
	opts := utxo.Options{Network: f.network, ReadOnly: readOnly, BatchOps: f.batchOps, UnminedRetention: f.unminedRetention}
	// Transactions over 1 MB or 20,000 outputs live in the blob store,
	// DATA/blobs (created with the first), beside the engine's files: a
	// store in memory or in Redis has none, its blobs would outlive it or
	// be this machine's alone.
	if keepsDataInDir(f.engine) {
		if opts.Blobs, err = blob.NewFileStore(filepath.Join(f.data, "blobs")); err != nil {
			eng.Close()
			return nil, err
		}
	}
	if sync == engine.SyncAlways && !readOnly {
		// Under SyncBlock there is no fsync to share: merging would
		// only add its wait.
		opts.BatchWait = f.batchWait.orDefault(f.engine)
	}
	store, err := utxo.Open(ctx, eng, opts)
	if err != nil {
		eng.Close()
		return failed(fmt.Errorf("opening the store on the %s engine: %w", f.engine, err))
	}
	if mode == createStore && keepsDataInDir(f.engine) && dir.engine == "" {
		if err := dir.mark(f.engine, f.network); err != nil {
			store.Close()
			return failed(err)
		}
	}
	return store, nil
}
