package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/engine/pebble"
	"github.com/utxostore/utxostore/engine/redis"
	"github.com/utxostore/utxostore/engine/sozu"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/utxo"
)

// defaultEngine is the engine used when --engine is not given.
const defaultEngine = "pebble"

// storeFlags are the flags of every command that opens a store.
type storeFlags struct {
	engine    string
	data      string
	sync      string
	network   string
	redis     string
	namespace string
	redisWait int
	verbose   bool
	index     bool
	sozu      string
	batchWait time.Duration
	batchOps  int
	// discardCorruptLog is --discard-corrupt-log: a salvage for one run,
	// taken from the command line only (commandLineOnly).
	discardCorruptLog bool
}

// registerIndex adds --index, for the commands that feed or serve the
// address index (import, serve, demo).
func (f *storeFlags) registerIndex(fs *flag.FlagSet) {
	fs.BoolVar(&f.index, "index", envOr("UTXOSTORE_INDEX", "") == "true", "keep the Blockbook address index (data format 5) in DATA/index, fed by the same blocks, and serve /api/v2/address and /api/v2/utxo")
}

// openIndex opens the address index when --index asks for it (nil
// otherwise). Its coin name follows the network, so an index of another
// network is refused like the store.
func (f *storeFlags) openIndex() (*index.Index, error) {
	if !f.index {
		return nil, nil
	}
	coin := map[string]string{"mainnet": "Bitcoin", "testnet": "Testnet", "testnet3": "Testnet", "regtest": "Regtest", "signet": "Signet"}[f.network]
	if coin == "" {
		coin = f.network
	}
	idx, err := index.Open(filepath.Join(f.data, "index"), index.Options{Coin: coin, NoSync: f.sync == "block"})
	if err != nil {
		return nil, fmt.Errorf("opening the address index: %w", err)
	}
	return idx, nil
}

// engineLog passes an engine's own messages (pebble's log replay reports,
// for instance) to stderr with --verbose, and drops them otherwise: they
// are printed on every open and would bury the command's output.
func (f *storeFlags) engineLog(format string, args ...any) {
	if f.verbose {
		fmt.Fprintf(os.Stderr, "engine: "+format+"\n", args...)
	}
}

func (f *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.engine, "engine", envOr("UTXOSTORE_ENGINE", defaultEngine), "storage engine: "+strings.Join(engineNames(), ", "))
	fs.StringVar(&f.data, "data", envOr("UTXOSTORE_DATA", defaultDataDir()), "data directory of an embedded engine")
	fs.StringVar(&f.sync, "sync", envOr("UTXOSTORE_SYNC", "always"), `durability: "always" (every acknowledged write survives a crash) or "block" (durable at block boundaries only; a crash loses the blocks since the last checkpoint, which import then re-applies)`)
	fs.StringVar(&f.network, "network", envOr("UTXOSTORE_NETWORK", "mainnet"), "network the store holds; a store of another network is refused")
	fs.StringVar(&f.redis, "redis", envOr("UTXOSTORE_REDIS", "127.0.0.1:7100"), "Redis Cluster node addresses, comma-separated (engine redis)")
	fs.BoolVar(&f.verbose, "verbose", false, "print the storage engine's own log messages on stderr")
	fs.IntVar(&f.redisWait, "redis-wait", 0, "replicas that must acknowledge writes (Redis WAIT) before they count as durable; 0 relies on the masters' AOF (engine redis)")
	fs.BoolVar(&f.discardCorruptLog, "discard-corrupt-log", false, "engine sozu: open a store whose log is damaged before its end (Open refuses it otherwise) by dropping the log from the damaged write on; the writes logged from there are lost. A torn end is always dropped, and reported")
	fs.StringVar(&f.sozu, "sozu-tuning", envOr("UTXOSTORE_SOZU_TUNING", ""), "tuning of engine sozu, comma-separated name=value settings over the measured defaults (e.g. alpha=0.75,changes=134217728): "+sozu.TuningHelp)
	fs.DurationVar(&f.batchWait, "batch-wait", utxo.DefaultBatchWait, "with --sync always, merge the writes of concurrent callers into one engine batch (one fsync, one Redis round trip per master); while another batch is being written, a batch closes this long after it opens or at --batch-ops updates; 0 turns merging off")
	fs.IntVar(&f.batchOps, "batch-ops", utxo.DefaultBatchOps, "updates at which a merged batch closes early (see --batch-wait)")
	fs.StringVar(&f.namespace, "redis-namespace", envOr("UTXOSTORE_REDIS_NAMESPACE", "utxostore"), "key prefix of the store in Redis, so several stores can share a cluster (engine redis)")
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func defaultDataDir() string {
	if dir, err := os.UserHomeDir(); err == nil {
		return filepath.Join(dir, ".utxostore")
	}
	return ".utxostore"
}

// opener opens one engine from the flags.
type opener func(ctx context.Context, f *storeFlags, sync engine.SyncMode) (engine.Engine, error)

var engines = map[string]opener{
	"memory": func(context.Context, *storeFlags, engine.SyncMode) (engine.Engine, error) { return memory.New(), nil },
	"pebble": func(_ context.Context, f *storeFlags, sync engine.SyncMode) (engine.Engine, error) {
		return pebble.Open(filepath.Join(f.data, "pebble"), pebble.Options{Sync: sync, Logf: f.engineLog})
	},
	"sozu": func(_ context.Context, f *storeFlags, sync engine.SyncMode) (engine.Engine, error) {
		o, err := f.sozuOptions()
		if err != nil {
			return nil, err
		}
		o.Sync = sync
		return openSozu(filepath.Join(f.data, "sozu"), o)
	},
	"redis": func(ctx context.Context, f *storeFlags, sync engine.SyncMode) (engine.Engine, error) {
		return redis.Open(ctx, redis.Options{Addrs: strings.Split(f.redis, ","), Namespace: f.namespace, Sync: sync, Wait: f.redisWait})
	},
}

// sozuOptions are the Sozu options --sozu-tuning and --discard-corrupt-log
// ask for; a spec that cannot be read is a usage error.
func (f *storeFlags) sozuOptions() (sozu.Options, error) {
	o, err := sozu.ParseTuning(f.sozu)
	if err != nil {
		return o, usagef("--sozu-tuning: %v", err)
	}
	o.DiscardCorruptLog = f.discardCorruptLog
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

// open opens the engine and the store over it.
func (f *storeFlags) open(ctx context.Context) (*utxo.DB, error) {
	openEngine, ok := engines[f.engine]
	if !ok {
		return nil, usagef("unknown engine %q: choose one of %s", f.engine, strings.Join(engineNames(), ", "))
	}
	sync, err := engine.ParseSyncMode(f.sync)
	if err != nil {
		return nil, usagef("%v", err)
	}
	eng, err := openEngine(ctx, f, sync)
	if err != nil {
		return nil, fmt.Errorf("opening the %s engine: %w", f.engine, err)
	}
	opts := utxo.Options{Network: f.network, BatchOps: f.batchOps}
	if sync == engine.SyncAlways {
		// Under SyncBlock there is no fsync to share: merging would
		// only add its wait.
		opts.BatchWait = f.batchWait
	}
	store, err := utxo.Open(ctx, eng, opts)
	if err != nil {
		eng.Close()
		return nil, fmt.Errorf("opening the store on the %s engine: %w", f.engine, err)
	}
	return store, nil
}
