package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/utxostore/utxostore/blockbook"
	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/follow"
	"github.com/utxostore/utxostore/server"
)

const syncHelp = `Usage: utxostore sync --peer HOST:PORT [flags]

Follows a node of the store's --network over the P2P protocol: Bitcoin,
Bitcoin Cash (bch-*) or Bitcoin SV (bsv-*) (tested against btcd and bchd,
and a peer of Bitcoin SV's protocol; package follow says how). A node of
the other chain that shares the network's P2P magic (Bitcoin Cash's and
Bitcoin SV's) is refused, by its user agent or its block at the height
the chains split, with a message, not a ban. A block over 4 MB flows
from the socket to the block store and is connected from there, never
held whole; --max-block-size bounds the blocks accepted. It catches up
headers first, several blocks in flight, then stays
at the node's tip, through reorganisations, storing the node's unconfirmed
transactions as unmined (then mined when a block holds them, conflicting
when a block double-spends them, and removed --unmined-retention blocks
after they came when none has mined them). With --index the address index
follows the same blocks.

It resumes from the store's tip hash: kill it at any point and run it again.
A store whose tip is off the node's chain is reorganised back to the fork
point, if that is within --rollback-window blocks, and refused otherwise.
The raw blocks go to the block store DATA/blocks, which keeps the window
(with --index, --block-retention blocks, 0 for all, and the API serves
them); a reorganisation reads the blocks it disconnects from there.

Progress goes to stderr: a bar on a terminal, plain lines otherwise; the
follower's Prometheus metrics (peer and store height, blocks behind,
mempool transactions, reorganisations and the last one's depth, the end of
a ban) are served with --metrics. A lost connection is logged and
reconnected with backoff. A node that sends invalid data (a block that
fails the checks or spends what does not exist, headers that do not form
a chain, a message that does not parse) is banned for --ban-duration: a
log line says why and until when, no connection is made meanwhile, and the
ban outlives a restart (DATA/follow/bans.json). With --stop-at-tip it
exits at the node's tip and prints the summary line, as import does, or
with an error while the node is banned.

Flags:
`

// followFlags are the flags of the commands that follow a node (sync,
// serve).
type followFlags struct {
	peer           string
	rollbackWindow uint
	inFlight       int
	banDuration    time.Duration
	maxBlockSize   uint64
}

func (f *followFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.peer, "peer", "", "follow the Bitcoin node at this P2P address (host:port) on --network")
	fs.UintVar(&f.rollbackWindow, "rollback-window", follow.DefaultRollbackWindow, "blocks a reorganisation can disconnect (the block store DATA/blocks keeps their raw blocks: with --index, --block-retention must be 0 or at least this)")
	fs.IntVar(&f.inFlight, "in-flight", follow.DefaultInFlight, "blocks asked of the node at once during catch-up")
	fs.DurationVar(&f.banDuration, "ban-duration", follow.DefaultBanDuration, "how long the node is banned after it sent invalid data: no connection to it meanwhile (kept in DATA/follow/bans.json, which can be deleted to lift a ban); 0 only drops the connection and reconnects")
	fs.Uint64Var(&f.maxBlockSize, "max-block-size", 0, "largest block accepted from the node, in bytes (0: the network's: 4,000,000 for Bitcoin, 32,000,000 for Bitcoin Cash, 10 GiB for Bitcoin SV, whose nodes set their own -excessiveblocksize)")
}

// settings adds what the follower asks of the block path to ps: the raw
// blocks of its rollback window, and the block size limit.
func (f *followFlags) settings(ps pathSettings) pathSettings {
	if f.peer != "" {
		ps.followWindow, ps.maxBlockSize = uint32(f.rollbackWindow), f.maxBlockSize
	}
	return ps
}

// follower builds the follower of f.peer: cfg names the path it feeds and
// what hears of it (metrics, progress, log), the flags the rest.
func (f *followFlags) follower(sf *storeFlags, cfg follow.Config) (*follow.Follower, error) {
	network, err := chain.LookupNetwork(sf.network)
	if err != nil {
		return nil, usagef("--network: %v", err)
	}
	cfg.Peer, cfg.Network = f.peer, network
	cfg.RollbackWindow, cfg.InFlight = uint32(f.rollbackWindow), f.inFlight
	cfg.BanDuration, cfg.BanFile = f.followBanDuration(), banFile(sf)
	fol, err := follow.New(cfg)
	if errors.Is(err, follow.ErrRetentionBelowWindow) {
		return nil, usagef("--block-retention %d is below --rollback-window %d: a reorganisation reads the blocks it disconnects from the block store; raise --block-retention (0 keeps every block) or lower --rollback-window", sf.blocks.retention, f.rollbackWindow)
	}
	return fol, err
}

// banFile keeps the follower's bans across restarts.
func banFile(sf *storeFlags) string { return filepath.Join(sf.data, "follow", "bans.json") }

// followBanDuration is --ban-duration as follow.Config takes it: 0 there
// is the default, a negative duration no ban.
func (f *followFlags) followBanDuration() time.Duration {
	if f.banDuration <= 0 {
		return -1
	}
	return f.banDuration
}

// syncProgress reports catch-up with the import's progress forms.
type syncProgress struct{ blockProgress }

func (p syncProgress) Block(height uint32, txs int, size int64) { p.block(height, txs, size) }
func (p syncProgress) CaughtUp()                                { p.done() }

func runSync(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("sync", flag.ContinueOnError)
	var sf storeFlags
	sf.register(fs)
	sf.registerIndex(fs)
	sf.registerUnminedRetention(fs)
	var ff followFlags
	ff.register(fs)
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics on this address (http://ADDR/metrics)")
	stopAtTip := fs.Bool("stop-at-tip", false, "exit at the node's tip and print the summary line")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	every := fs.Int("progress-blocks", 0, "print a progress line every N blocks (instead of a bar on a terminal, or a line every 2 seconds)")
	fs.Usage = func() { fmt.Fprint(fs.Output(), syncHelp); fs.PrintDefaults() }
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if ff.peer == "" {
		fs.Usage()
		return usagef("--peer is required")
	}
	if fs.NArg() > 0 {
		return usagef("sync takes no arguments, got %q", fs.Args())
	}
	// An existing store brings its own network; only a given one is
	// checked before the store is opened (or created on it).
	if sf.network != "" {
		if _, err := chain.LookupNetwork(sf.network); err != nil {
			return usagef("--network: %v", err)
		}
	}
	metrics := follow.NewMetrics()
	if *metricsAddr != "" {
		addr, err := serveMetrics(ctx, *metricsAddr, metrics)
		if err != nil {
			return err
		}
		sf.log().Info("serving metrics", "url", "http://"+addr+"/metrics")
	}
	st, err := sf.openStores(ctx, createStore, ff.settings(pathSettings{}))
	if err != nil {
		return err
	}
	progress := newBlockProgress(os.Stderr, 0, *quiet, *every)
	if lines, ok := progress.(*lineProgress); ok {
		lines.verb = "synced"
	}
	fol, err := ff.follower(&sf, follow.Config{Path: st.path, Metrics: metrics, Progress: syncProgress{progress}, StopAtTip: *stopAtTip, Logger: sf.log()})
	if err == nil {
		err = fol.Run(ctx)
	}
	if banned := (*follow.BannedError)(nil); errors.As(err, &banned) {
		err = fmt.Errorf("%w; deleting %s lifts the ban", err, banFile(&sf))
	}
	if err == nil && *stopAtTip {
		err = writeSummary(ctx, st.store, os.Stdout)
	}
	if err != nil || ctx.Err() != nil {
		// Refused or stopped before its first block (a peer of another
		// network, one that cannot be reached or does not answer), a sync
		// into a new data directory leaves nothing there.
		return st.fail(ctx, err)
	}
	return st.close()
}

// serveMetrics serves the metrics, with the Go and process collectors, on
// addr until ctx ends, and returns the bound address.
func serveMetrics(ctx context.Context, addr string, metrics prometheus.Collector) (string, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("--metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	go func() { <-ctx.Done(); srv.Close() }()
	return ln.Addr().String(), nil
}

// daemonFollower is serve --peer: the follower beside the daemon, whose
// readiness fails while the store is more than maxBehind blocks behind the
// peer, and whose metrics the daemon serves.
type daemonFollower struct {
	fol       *follow.Follower
	metrics   *follow.Metrics
	peer      string
	maxBehind uint32
	cancel    context.CancelFunc
	failures  chan error    // the error that stopped the follower
	stopped   chan struct{} // closed when Run has returned
}

// newDaemonFollower builds the follower of serve --peer; nil without
// --peer.
func newDaemonFollower(cfg *serveConfig, path *blockpath.Path) (*daemonFollower, error) {
	if cfg.follow.peer == "" {
		return nil, nil
	}
	d := &daemonFollower{metrics: follow.NewMetrics(), peer: cfg.follow.peer, maxBehind: uint32(cfg.readyMaxBehind)}
	var err error
	d.fol, err = cfg.follow.follower(&cfg.store, follow.Config{Path: path, Metrics: d.metrics, Logger: cfg.log})
	return d, err
}

// followerNode is the node the daemon follows, as the Blockbook API's
// sendtx sees it.
type followerNode struct{ fol *follow.Follower }

// SendTx stores the transaction as unmined, then relays it to the node
// (follow.Follower.Relay): a double spend is refused and not relayed.
func (n followerNode) SendTx(ctx context.Context, raw []byte) (chainhash.Hash, error) {
	tx, err := chain.ParseTx(raw)
	if err != nil {
		return chainhash.Hash{}, fmt.Errorf("%w: %v", blockbook.ErrTxNotParsed, err)
	}
	return tx.ID, n.fol.Relay(ctx, tx)
}

// backend wraps the daemon's backend with the follower's readiness.
func (d *daemonFollower) backend(b server.Backend) server.Backend {
	if d == nil {
		return b
	}
	return followingBackend{Backend: b, d: d}
}

// start registers the metrics with the daemon, makes the node the one its
// sendtx uses and its websocket hears blocks from, and runs
// the follower until stop.
func (d *daemonFollower) start(ctx context.Context, srv *server.Server) {
	if d == nil {
		return
	}
	srv.Blockbook().SetNode(followerNode{d.fol})
	srv.Metrics().Registry.MustRegister(d.metrics)
	ctx, d.cancel = context.WithCancel(ctx)
	d.failures, d.stopped = make(chan error, 1), make(chan struct{})
	go func() {
		if err := d.fol.Run(ctx); err != nil {
			d.failures <- err
		}
		close(d.stopped)
	}()
}

// failed yields the error that stopped the follower (never, without one).
func (d *daemonFollower) failed() <-chan error {
	if d == nil {
		return nil
	}
	return d.failures
}

// stop stops the follower and waits for it, before the store closes.
func (d *daemonFollower) stop() {
	if d == nil || d.cancel == nil {
		return
	}
	d.cancel()
	<-d.stopped
}

// followingBackend is the daemon's backend, not ready until the store is
// within maxBehind blocks of the peer.
type followingBackend struct {
	server.Backend
	d *daemonFollower
}

func (b followingBackend) Health(ctx context.Context) error {
	if err := b.Backend.Health(ctx); err != nil {
		return err
	}
	if ban, banned := b.d.fol.Banned(); banned {
		return &follow.BannedError{Peer: b.d.peer, Ban: ban}
	}
	behind, known := b.d.fol.Behind()
	if !known {
		return fmt.Errorf("not connected to the peer %s, or it has not told its chain yet", b.d.peer)
	}
	if behind > b.d.maxBehind {
		return fmt.Errorf("%d blocks behind the peer %s (more than --ready-max-behind %d)", behind, b.d.peer, b.d.maxBehind)
	}
	return nil
}
