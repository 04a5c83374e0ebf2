package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/utxostore/utxostore/blockbook"
	"github.com/utxostore/utxostore/electrum"
	"github.com/utxostore/utxostore/server"
)

// serveConfig is the daemon's whole configuration: the store flags shared
// with import and info, and the server's own. Its FlagSet is the one source
// of truth, read as every command's is (parseFlags): flags > env > file >
// defaults.
type serveConfig struct {
	store           storeFlags
	grpcAddr        string
	httpAddr        string
	healthAddr      string
	electrumAddr    string
	electrum        electrum.Limits
	token           string
	tlsCert         string
	tlsKey          string
	maxBatch        int
	maxBody         int64
	maxMessage      int
	shutdownTimeout time.Duration
	httpPublic      bool
	trustedNetwork  bool
	maxInflight     int64
	maxConns        int
	headerTimeout   time.Duration
	readTimeout     time.Duration
	writeTimeout    time.Duration
	idleTimeout     time.Duration
	grpcReadTimeout time.Duration
	grpcMaxStreams  int
	maxConnRequests int
	maxWebsockets   int
	wsMaxAddresses  int
	wsMaxAddrsTotal int
	wsQueue         int
	maxXpubGap      int
	maxXpubAddrs    int
	maxRequestTxs   int
	configFile      string
	trustBlocks     bool
	create          bool
	logFormat       logFormat
	// log is the daemon's logger, in --log-format, built by parse.
	log *slog.Logger
	// follow and readyMaxBehind are serve --peer's.
	follow         followFlags
	readyMaxBehind uint

	fs *flag.FlagSet
	// sources says where each flag's value came from: flag, env, file or
	// default.
	sources map[string]string
}

// secretFlags are never printed.
var secretFlags = map[string]bool{"token": true}

// commandLineOnly are flags taken from the command line alone, each with
// why: a setting that waives a safeguard would stay in force for every
// later run if the environment or a config file could set it.
var commandLineOnly = map[string]string{
	"discard-corrupt-log": "a salvage for one run",
	"trust-blocks":        "it waives the block checks of one run",
}

func newServeConfig(name, help string) *serveConfig {
	c := &serveConfig{fs: newFlagSet(name, help)}
	fs := c.fs
	c.store.register(fs)
	c.store.registerIndex(fs)
	c.store.registerUnminedRetention(fs)
	fs.StringVar(&c.grpcAddr, "grpc", server.DefaultGRPCAddr, "gRPC listen address (host:port; port 0 picks a free one)")
	fs.StringVar(&c.httpAddr, "http", server.DefaultHTTPAddr, "HTTP listen address for /api, /metrics and /health")
	fs.StringVar(&c.healthAddr, "health", "", "a listener of its own for /health/live and /health/ready (host:port), which no load on --http can starve; off when empty")
	fs.StringVar(&c.electrumAddr, "electrum", "", "serve the Electrum protocol (TCP; TLS with --tls-cert) on this address (host:port); needs --index; off when empty")
	fs.IntVar(&c.electrum.MaxSubs, "electrum-max-subs", electrum.DefaultMaxSubs, "most script hashes one Electrum connection subscribes to")
	fs.IntVar(&c.electrum.MaxSubsTotal, "electrum-max-subs-total", electrum.DefaultMaxSubsTotal, "most script hash subscriptions of every Electrum connection together")
	fs.IntVar(&c.electrum.MaxHistory, "electrum-max-history", electrum.DefaultMaxHistory, "most transactions one Electrum history answer holds; a longer history is asked for by height range (protocol 1.5)")
	fs.IntVar(&c.electrum.MaxRequest, "electrum-max-request", electrum.DefaultMaxRequest, "largest Electrum request line in bytes; a connection sending a longer one is closed")
	fs.DurationVar(&c.electrum.IdleTimeout, "electrum-idle-timeout", electrum.DefaultIdleTimeout, "how long an Electrum connection may send nothing (wallets ping every few minutes)")
	fs.StringVar(&c.token, "token", "", "bearer token required by mutating RPCs and by every HTTP path but /health (the API, the explorer, /metrics); mandatory on a non-loopback address")
	fs.BoolVar(&c.httpPublic, "http-public", false, "serve the API, the explorer and /metrics without the token (mutating RPCs still need it)")
	fs.BoolVar(&c.trustedNetwork, "trusted-network", false, "allow the token over plain TCP on a non-loopback address (without it, such an address needs TLS)")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "TLS certificate (PEM) for the listeners (gRPC, HTTP and Electrum)")
	fs.StringVar(&c.tlsKey, "tls-key", "", "TLS private key (PEM)")
	fs.IntVar(&c.maxBatch, "max-batch", server.DefaultMaxBatch, "most items in one batch RPC")
	fs.Int64Var(&c.maxBody, "max-body", server.DefaultMaxBody, "largest HTTP request body in bytes (413 above)")
	fs.IntVar(&c.maxMessage, "max-message", server.DefaultMaxMessage, "largest gRPC message in bytes (ResourceExhausted above); a whole block must fit")
	fs.Int64Var(&c.maxInflight, "max-inflight-bytes", server.DefaultMaxInflightBytes, "gRPC request memory of the calls being served: a call whose message has arrived reserves its size before it is handled; more calls wait")
	fs.DurationVar(&c.grpcReadTimeout, "grpc-read-timeout", server.DefaultGRPCReadTimeout, "time from a gRPC call's start to the end of its message; the connection of a call over it is closed")
	fs.IntVar(&c.grpcMaxStreams, "grpc-max-streams", server.DefaultGRPCMaxStreams, "most calls open at once on one gRPC connection")
	fs.IntVar(&c.maxConns, "max-conns", server.DefaultMaxConns, "most open connections on each listener; more wait to be accepted")
	fs.DurationVar(&c.headerTimeout, "http-header-timeout", server.DefaultHTTPHeaderTimeout, "time to read an HTTP request's headers (and a gRPC connection's handshake)")
	fs.DurationVar(&c.readTimeout, "http-read-timeout", server.DefaultHTTPReadTimeout, "time to read a whole HTTP request, body included")
	fs.DurationVar(&c.writeTimeout, "http-write-timeout", server.DefaultHTTPWriteTimeout, "time from an HTTP request's headers to the end of its answer; its work stops then (503)")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", server.DefaultIdleTimeout, "how long a connection with no request in progress is kept (HTTP keep-alive and gRPC)")
	fs.IntVar(&c.maxConnRequests, "max-conn-requests", server.DefaultMaxConnRequests, "requests one HTTP connection serves before it is closed: the most answers a pipelining client leaves unread")
	fs.IntVar(&c.maxWebsockets, "max-websockets", server.DefaultMaxWebsockets, "most open websockets (429 above); they do not count against --max-conns")
	fs.IntVar(&c.wsMaxAddresses, "ws-max-addresses", blockbook.DefaultWSMaxAddresses, "most addresses one websocket subscribes to")
	fs.IntVar(&c.wsMaxAddrsTotal, "ws-max-addresses-total", blockbook.DefaultWSMaxAddressesTotal, "most addresses every websocket together subscribes to")
	fs.IntVar(&c.wsQueue, "ws-queue", blockbook.DefaultWSQueue, `requests one websocket may have unanswered or their answers unread; past them its requests are answered "too many requests"`)
	fs.IntVar(&c.maxXpubGap, "max-xpub-gap", blockbook.DefaultMaxXpubGap, "largest gap an xpub request may ask for (400 above; Blockbook's largest)")
	fs.IntVar(&c.maxXpubAddrs, "max-xpub-addresses", blockbook.DefaultMaxXpubAddresses, "most addresses one xpub request derives (400 above)")
	fs.IntVar(&c.maxRequestTxs, "max-request-txs", blockbook.DefaultMaxRequestTxs, "most transactions one API request gathers from the address index (400 above)")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long in-flight requests may run after SIGTERM")
	fs.StringVar(&c.configFile, "config", "", `JSON file of settings, {"flag-name": value, ...}`)
	c.logFormat = "text"
	fs.Var(&c.logFormat, "log-format", "`format` of the log records on stderr: \"text\" (key=value lines) or \"json\" (one JSON object a line)")
	fs.BoolVar(&c.trustBlocks, "trust-blocks", false, "skip ConnectBlock's proof-of-work, genesis block and merkle root checks (the structure checks still run): for a caller that validated its blocks already; command line only")
	fs.BoolVar(&c.create, "create", false, "create the store when the data directory holds none (without it, serve refuses a missing or empty data directory)")
	c.follow.register(fs)
	fs.UintVar(&c.readyMaxBehind, "ready-max-behind", 2, "with --peer, /health/ready fails while the store is more than this many blocks behind the peer")
	return c
}

// envName is the environment variable of a flag: UTXOSTORE_MAX_BATCH for
// --max-batch.
func envName(flagName string) string {
	return "UTXOSTORE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parse reads the command line, then resolves the rest, and builds the
// logger the settings ask for.
func (c *serveConfig) parse(args []string) error {
	var err error
	if c.sources, err = parseFlags(c.fs, args); err != nil {
		return err
	}
	c.log = c.logFormat.logger(os.Stderr)
	c.store.logger = c.log
	return nil
}

// logFormat is --log-format: the handler of the daemon's log records.
type logFormat string

func (f *logFormat) String() string { return string(*f) }

func (f *logFormat) Set(v string) error {
	if v != "text" && v != "json" {
		return fmt.Errorf(`want "text" or "json", got %q`, v)
	}
	*f = logFormat(v)
	return nil
}

func (f logFormat) logger(w io.Writer) *slog.Logger {
	if f == "json" {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// parseFlags reads every command's settings, in one order: the command
// line, then the environment (UTXOSTORE_<FLAG>, envName), then the file
// the command's --config flag names (serve, config and demo have one),
// then the flag's default. The flags of commandLineOnly come from the
// command line alone. It returns where each value came from: "flag",
// "env NAME", "file PATH" or "default".
func parseFlags(fs *flag.FlagSet, args []string) (map[string]string, error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	sources := map[string]string{}
	fs.Visit(func(f *flag.Flag) { sources[f.Name] = "flag" })
	var configFile string
	var file map[string]string
	if cf := fs.Lookup("config"); cf != nil {
		if sources["config"] == "" {
			if v := os.Getenv(envName("config")); v != "" {
				if err := cf.Value.Set(v); err != nil {
					return nil, err
				}
				sources["config"] = "env"
			}
		}
		configFile = cf.Value.String()
		var err error
		if file, err = readConfigFile(configFile); err != nil {
			return nil, err
		}
		for name := range file {
			if name == "config" || fs.Lookup(name) == nil {
				return nil, usagef("config file %s: unknown setting %q (settings are flag names: %s)", configFile, name, strings.Join(flagNames(fs), ", "))
			}
			if why, only := commandLineOnly[name]; only {
				return nil, usagef("config file %s: %q is taken from the command line only (%s)", configFile, name, why)
			}
		}
	}
	var firstErr error
	fs.VisitAll(func(f *flag.Flag) {
		if sources[f.Name] != "" || firstErr != nil {
			return
		}
		if _, only := commandLineOnly[f.Name]; only {
			sources[f.Name] = "default"
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok && v != "" {
			sources[f.Name] = "env " + envName(f.Name)
			if err := f.Value.Set(v); err != nil {
				firstErr = usagef("%s=%q: %v", envName(f.Name), v, err)
			}
			return
		}
		if v, ok := file[f.Name]; ok {
			sources[f.Name] = "file " + configFile
			if err := f.Value.Set(v); err != nil {
				firstErr = usagef("config file %s: %s=%q: %v", configFile, f.Name, v, err)
			}
			return
		}
		sources[f.Name] = "default"
	})
	return sources, firstErr
}

// parseWithArgs is parseFlags for a command that needs arguments: without
// any, it shows the command's usage and refuses with missing.
func parseWithArgs(fs *flag.FlagSet, args []string, missing string) error {
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return usagef("%s", missing)
	}
	return nil
}

// readConfigFile reads a flat JSON object; values may be strings, numbers
// or booleans and are set as if given on the command line.
func readConfigFile(path string) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the config file: %w", err)
	}
	var values map[string]any
	if err := json.Unmarshal(raw, &values); err != nil {
		return nil, usagef("config file %s: want one JSON object of settings: %v", path, err)
	}
	out := make(map[string]string, len(values))
	for k, v := range values {
		switch v.(type) {
		case string, float64, bool:
			out[k] = fmt.Sprint(v)
		default:
			return nil, usagef("config file %s: %q must be a string, number or boolean", path, k)
		}
	}
	return out, nil
}

// flagNames are the names of fs's flags, sorted.
func flagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	sort.Strings(names)
	return names
}

// print writes the effective configuration and each value's source.
func (c *serveConfig) print(w io.Writer) {
	for _, name := range flagNames(c.fs) {
		value := c.fs.Lookup(name).Value.String()
		if secretFlags[name] && value != "" {
			value = "(set, hidden)"
		}
		fmt.Fprintf(w, "%-24s %-40s %s\n", name, value, c.sources[name])
	}
}

// serverOptions maps the configuration to the server's options.
func (c *serveConfig) serverOptions() server.Options {
	return server.Options{GRPCAddr: c.grpcAddr, HTTPAddr: c.httpAddr, HealthAddr: c.healthAddr, ElectrumAddr: c.electrumAddr, Electrum: c.electrum, Token: c.token, TLSCert: c.tlsCert, TLSKey: c.tlsKey,
		HTTPPublic: c.httpPublic, TrustedNetwork: c.trustedNetwork,
		MaxBatch: c.maxBatch, MaxBody: c.maxBody, MaxMessage: c.maxMessage, MaxInflightBytes: c.maxInflight,
		GRPCReadTimeout: c.grpcReadTimeout, GRPCMaxStreams: c.grpcMaxStreams, MaxConns: c.maxConns,
		HTTPHeaderTimeout: c.headerTimeout, HTTPReadTimeout: c.readTimeout, HTTPWriteTimeout: c.writeTimeout, IdleTimeout: c.idleTimeout,
		MaxConnRequests: c.maxConnRequests, MaxWebsockets: c.maxWebsockets,
		Blockbook: blockbook.Limits{WSMaxAddresses: c.wsMaxAddresses, WSMaxAddressesTotal: c.wsMaxAddrsTotal, WSQueue: c.wsQueue,
			MaxXpubGap: c.maxXpubGap, MaxXpubAddresses: c.maxXpubAddrs, MaxRequestTxs: c.maxRequestTxs},
		Engine: c.store.engine, Network: c.store.network, Logger: c.log}
}

const configHelp = `Usage: utxostore config [flags]

Prints the effective configuration of 'utxostore serve' with the same flags,
and where each value came from. Precedence: command-line flag, then the
environment (UTXOSTORE_<FLAG>, e.g. UTXOSTORE_MAX_BATCH), then the --config
JSON file ({"grpc": "127.0.0.1:8335", "max-batch": 5000}), then the default.
Its last line is the Go memory limit serve runs under: a sozu store's memory
budget (--sozu-tuning memory=BYTES), plus 2 GiB for the address index with
--index, unless GOMEMLIMIT is lower.
The engine and network, when none of these gives them, are those of the
store in the data directory (the defaults for a new store); config reads the
data directory and changes nothing.

Flags:
`

func runConfig(_ context.Context, args []string) error {
	c := newServeConfig("config", configHelp)
	if err := c.parse(args); err != nil {
		return err
	}
	if err := c.resolveStore(); err != nil {
		return err
	}
	c.print(os.Stdout)
	return c.store.printMemoryLimit(os.Stdout)
}

// resolveStore settles the engine and network as serve would, from the
// data directory when not given, and names that source.
func (c *serveConfig) resolveStore() error {
	dir, err := c.store.resolve(describeStore)
	if err != nil {
		return err
	}
	for _, name := range []string{"engine", "network"} {
		if c.sources[name] == "default" && dir.engine != "" {
			c.sources[name] = "data directory " + c.store.data
		}
	}
	if !c.store.batchWait.set {
		c.sources["batch-wait"] = fmt.Sprintf("default on engine %s: %v", c.store.engine, c.store.batchWait.orDefault(c.store.engine))
	}
	return nil
}
