package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/utxostore/utxostore/server"
)

// serveConfig is the daemon's whole configuration: the store flags shared
// with import and info, and the server's own. Its FlagSet is the one source
// of truth; resolve fills every flag not given on the command line from the
// environment (UTXOSTORE_<NAME>), then from the --config file, leaving the
// default otherwise: flags > env > file > defaults.
type serveConfig struct {
	store           storeFlags
	grpcAddr        string
	httpAddr        string
	token           string
	tlsCert         string
	tlsKey          string
	maxBatch        int
	maxBody         int64
	maxMessage      int
	shutdownTimeout time.Duration
	configFile      string
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

// commandLineOnly are flags taken from the command line alone: a salvage
// for one run, which would stay in force for every later damage if the
// environment or a config file could set it.
var commandLineOnly = map[string]bool{"discard-corrupt-log": true}

func newServeConfig(name string) *serveConfig {
	c := &serveConfig{fs: flag.NewFlagSet(name, flag.ContinueOnError)}
	fs := c.fs
	c.store.register(fs)
	c.store.registerIndex(fs)
	fs.StringVar(&c.grpcAddr, "grpc", server.DefaultGRPCAddr, "gRPC listen address (host:port; port 0 picks a free one)")
	fs.StringVar(&c.httpAddr, "http", server.DefaultHTTPAddr, "HTTP listen address for /api, /metrics and /health")
	fs.StringVar(&c.token, "token", "", "bearer token required by mutating RPCs; mandatory on a non-loopback address")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "TLS certificate (PEM) for both listeners")
	fs.StringVar(&c.tlsKey, "tls-key", "", "TLS private key (PEM)")
	fs.IntVar(&c.maxBatch, "max-batch", server.DefaultMaxBatch, "most items in one batch RPC")
	fs.Int64Var(&c.maxBody, "max-body", server.DefaultMaxBody, "largest HTTP request body in bytes (413 above)")
	fs.IntVar(&c.maxMessage, "max-message", server.DefaultMaxMessage, "largest gRPC message in bytes (ResourceExhausted above); a whole block must fit")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long in-flight requests may run after SIGTERM")
	fs.StringVar(&c.configFile, "config", "", `JSON file of settings, {"flag-name": value, ...}`)
	c.follow.register(fs)
	fs.UintVar(&c.readyMaxBehind, "ready-max-behind", 2, "with --peer, /health/ready fails while the store is more than this many blocks behind the peer")
	return c
}

// envName is the environment variable of a flag: UTXOSTORE_MAX_BATCH for
// --max-batch (the store flags already follow this rule).
func envName(flagName string) string {
	return "UTXOSTORE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parse reads the command line, then resolves the rest.
func (c *serveConfig) parse(args []string) error {
	if err := c.fs.Parse(args); err != nil {
		return err
	}
	return c.resolve()
}

func (c *serveConfig) resolve() error {
	c.sources = map[string]string{}
	c.fs.Visit(func(f *flag.Flag) { c.sources[f.Name] = "flag" })
	if c.sources["config"] == "" {
		if v := os.Getenv(envName("config")); v != "" {
			c.configFile, c.sources["config"] = v, "env"
		}
	}
	file, err := readConfigFile(c.configFile)
	if err != nil {
		return err
	}
	for name := range file {
		if name == "config" || c.fs.Lookup(name) == nil {
			return usagef("config file %s: unknown setting %q (settings are flag names: %s)", c.configFile, name, strings.Join(c.names(), ", "))
		}
		if commandLineOnly[name] {
			return usagef("config file %s: %q is taken from the command line only (a salvage for one run)", c.configFile, name)
		}
	}
	var firstErr error
	c.fs.VisitAll(func(f *flag.Flag) {
		if c.sources[f.Name] != "" || firstErr != nil {
			return
		}
		if commandLineOnly[f.Name] {
			c.sources[f.Name] = "default"
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok && v != "" {
			c.sources[f.Name] = "env " + envName(f.Name)
			if err := f.Value.Set(v); err != nil {
				firstErr = usagef("%s=%q: %v", envName(f.Name), v, err)
			}
			return
		}
		if v, ok := file[f.Name]; ok {
			c.sources[f.Name] = "file " + c.configFile
			if err := f.Value.Set(v); err != nil {
				firstErr = usagef("config file %s: %s=%q: %v", c.configFile, f.Name, v, err)
			}
			return
		}
		c.sources[f.Name] = "default"
	})
	return firstErr
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

func (c *serveConfig) names() []string {
	var names []string
	c.fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	sort.Strings(names)
	return names
}

// print writes the effective configuration and each value's source.
func (c *serveConfig) print(w io.Writer) {
	for _, name := range c.names() {
		value := c.fs.Lookup(name).Value.String()
		if secretFlags[name] && value != "" {
			value = "(set, hidden)"
		}
		fmt.Fprintf(w, "%-17s %-40s %s\n", name, value, c.sources[name])
	}
}

// serverOptions maps the configuration to the server's options.
func (c *serveConfig) serverOptions() server.Options {
	return server.Options{GRPCAddr: c.grpcAddr, HTTPAddr: c.httpAddr, Token: c.token, TLSCert: c.tlsCert, TLSKey: c.tlsKey,
		MaxBatch: c.maxBatch, MaxBody: c.maxBody, MaxMessage: c.maxMessage, Engine: c.store.engine, Network: c.store.network}
}

const configHelp = `Usage: utxostore config [flags]

Prints the effective configuration of 'utxostore serve' with the same flags,
and where each value came from. Precedence: command-line flag, then the
environment (UTXOSTORE_<FLAG>, e.g. UTXOSTORE_MAX_BATCH), then the --config
JSON file ({"grpc": "127.0.0.1:8335", "max-batch": 5000}), then the default.

Flags:
`

func runConfig(_ context.Context, args []string) error {
	c := newServeConfig("config")
	c.fs.Usage = func() { fmt.Fprint(c.fs.Output(), configHelp); c.fs.PrintDefaults() }
	if err := c.parse(args); err != nil {
		return err
	}
	c.print(os.Stdout)
	return nil
}
