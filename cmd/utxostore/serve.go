package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/server"
)

const serveHelp = `Usage: utxostore serve [flags]

Serves the store of the data directory (--data), opened with the engine
and network it was created with: gRPC for every store operation (see
proto/), Blockbook v0.3.4's REST API (/api/v2, /api/v2/tx/{txid},
/api/v2/block/{height}, ...) and websocket (/websocket), the store's status
(/api/status; ?summary=true adds the UTXO set's summary, a walk of every
record), Prometheus metrics (/metrics) and health (/health/live,
/health/ready), and the block explorer's pages at / (/block/, /tx/,
/address/, /xpub/, /mempool, /search). With --index the address index (DATA/index) and the block
store (DATA/blocks, --block-retention) answer addresses, xpubs, blocks and
every transaction, spent or not; see the README for each endpoint.

With --electrum ADDR (and --index) it serves the Electrum protocol there
(TCP, or TLS with --tls-cert), which Electrum wallets and their libraries
speak; the README lists its methods, where it differs from ElectrumX and
its limits (--electrum-max-*). Blockbook's estimatefee and Electrum's
blockchain.estimatefee answer from the store's own recent blocks and
mempool, without a node.

A data directory that does not exist or holds no store is refused; with
--create, serve creates the store there (on --engine, sozu by default),
to be fed by 'utxostore client import' or any gRPC client.

ConnectBlock checks every block it is sent before applying any of it, as
import does (see 'utxostore import -h'), and refuses one that fails with
InvalidArgument naming the check. --trust-blocks, taken from the command
line only, skips the proof-of-work, genesis block and merkle root checks.

It listens on loopback by default. On any other address it refuses to start
without --token, and without TLS (--tls-cert/--tls-key) unless
--trusted-network says the network is private. With a token, every mutating
RPC and every HTTP request but /health/* must send
"authorization: Bearer <token>"; --http-public serves /api, the explorer
and /metrics without it. A call's token is checked before its message is read.

Hostile or stuck clients are bounded; every limit is a flag, and the
README lists them. Timeouts close slow and idle connections, --max-conns
caps the connections of each listener and --max-websockets the websockets.
A gRPC connection reads one call's message at a time, a call whose message
has arrived reserves its size from --max-inflight-bytes before it is
handled, and a call whose message has not arrived within
--grpc-read-timeout has its connection closed. An HTTP connection is
closed after --max-conn-requests answers. Limits on one request's work
(--max-xpub-gap, --max-xpub-addresses, --max-request-txs) and on
websocket subscriptions are refused with 400 or an error reply naming the
flag, and a request's work stops when its client leaves. --health serves
/health/* on a listener of its own, which no load on --http can starve.

It logs on stderr, in --log-format: text (key=value lines, the default) or
json (one object a line). Once listening it logs one record:
  msg=listening grpc=HOST:PORT http=HOST:PORT
and every request answered with a server error (HTTP 5xx, gRPC Internal,
Unknown, DataLoss or Unavailable) is one ERROR record naming the gRPC method,
or the HTTP method and route, with the error.
On SIGTERM or Ctrl-C it stops accepting, lets in-flight requests finish
(up to --shutdown-timeout), checkpoints and closes the store.

With --peer it follows a Bitcoin node over the P2P protocol as 'utxostore
sync' does (the followed blocks go to the block store, which the API
serves them from with --index), /health/ready (gRPC Health) fails while
the store is more than --ready-max-behind blocks behind it, while the
follower is not connected to it, or while the node is banned for invalid
data (the reason is in the answer), and
/api/v2/sendtx/{hex} (gRPC SendTx) stores a transaction as unmined
(refusing a double spend) and relays it to the node. Unmined transactions, the node's and the ones
created over gRPC, are removed --unmined-retention blocks after they came
when no block has mined them.

'utxostore backup --server ADDR DIR' has the daemon copy its whole data
directory into DIR, and 'utxostore snapshot dump --server ADDR' streams
its UTXO set, each at one block while it serves: blocks wait while the
copy is made or the set is spooled to the daemon's disk (not while a
client reads it).

Settings come from flags, the environment and --config; run
'utxostore config' to see the effective ones.

Flags:
`

func runServe(ctx context.Context, args []string) error {
	cfg := newServeConfig("serve", serveHelp)
	if err := cfg.parse(args); err != nil {
		return err
	}
	if cfg.fs.NArg() > 0 {
		return usagef("serve takes no arguments, got %q", cfg.fs.Args())
	}
	// Check the listener settings before opening the store, so a refused
	// configuration never touches the data directory.
	if err := cfg.serverOptions().Validate(); err != nil {
		return usagef("%v", err)
	}
	mode := existingStore
	if cfg.create {
		mode = createStore
	}
	ps := cfg.follow.settings(pathSettings{trustBlocks: cfg.trustBlocks, logger: cfg.log})
	st, err := cfg.store.openStores(ctx, mode, ps)
	if err != nil {
		return err
	}
	if st.store.UncleanShutdown {
		cfg.log.Warn("the previous run did not close the store; the engine recovered its log")
	}
	// Refused here, serve --create leaves no new store behind.
	if err := checkElectrum(cfg, st.path); err != nil {
		return st.fail(ctx, err)
	}
	if err := reportLag(ctx, cfg.log, st.path); err != nil {
		return st.fail(ctx, err)
	}
	return serveStores(ctx, cfg, st, nil)
}

// serveStores serves open stores until ctx ends, then shuts down and
// closes them. ready, when set, runs once both listeners are bound. A
// daemon that fails before it listens (its address taken, say) closes
// them as a refused command does (stores.fail): serve --create leaves no
// new store behind.
func serveStores(ctx context.Context, cfg *serveConfig, st *stores, ready func(grpcAddr, httpAddr string)) (err error) {
	bound := false
	defer func() {
		if bound {
			err = errors.Join(err, st.close())
		} else {
			err = st.fail(ctx, err)
		}
	}()
	opts := cfg.serverOptions()
	opts.ExternalAbove = st.store.Options().MaxTxSizeInStore
	opts.Snapshots = newDaemonSnapshots(st, &cfg.store)
	following, err := newDaemonFollower(cfg, st.path)
	if err != nil {
		return err
	}
	defer following.stop() // before the stores close
	srv, err := server.New(following.backend(server.NewBackend(st.path)), opts)
	if err != nil {
		return usagef("%v", err)
	}
	st.path.OnConnect(srv.NotifyBlock)
	st.path.OnDisconnect(srv.NotifyDisconnect)
	if err := srv.Start(); err != nil {
		return err
	}
	bound = true
	following.start(ctx, srv)
	listening := []any{"grpc", srv.GRPCAddr(), "http", srv.HTTPAddr()}
	if srv.ElectrumAddr() != "" {
		listening = append(listening, "electrum", srv.ElectrumAddr())
	}
	if srv.HealthAddr() != "" {
		listening = append(listening, "health", srv.HealthAddr())
	}
	cfg.log.Info("listening", listening...)
	if ready != nil {
		ready(srv.GRPCAddr(), srv.HTTPAddr())
	}
	select {
	case <-ctx.Done():
	case err = <-srv.Failed():
		err = fmt.Errorf("a listener stopped: %w", err)
	case err = <-following.failed():
		err = fmt.Errorf("following the peer stopped: %w", err)
	}
	cfg.log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
	defer cancel()
	if shutdownErr := srv.Shutdown(shutdownCtx); shutdownErr != nil {
		cfg.log.Warn("requests cut off", "after", cfg.shutdownTimeout, "error", shutdownErr)
	}
	return err
}

// reportLag says so when a store kept beside the UTXO store lacks some of
// its blocks (turned on later, or left behind by a crash that the block
// store could not repair): the daemon then takes those blocks again, for
// it alone, before any new one.
func reportLag(ctx context.Context, log *slog.Logger, path *blockpath.Path) error {
	lag, err := path.Lag(ctx)
	if err != nil || lag.Derived == "" {
		return err
	}
	log.Warn(fmt.Sprintf("%s; run 'utxostore import --server ADDR FILE...' with the block files (or serve --peer, which asks the node) to give them; new blocks are refused until then", lag),
		"next_height", lag.Next)
	return nil
}

// checkElectrum refuses --electrum without the address index, or with an
// index built before its Electrum columns existed.
func checkElectrum(cfg *serveConfig, path *blockpath.Path) error {
	if cfg.electrumAddr == "" {
		return nil
	}
	ix := path.Index()
	if ix == nil {
		return usagef("--electrum needs --index: the Electrum protocol answers from the address index")
	}
	if !ix.HasElectrum() {
		dir := filepath.Join(cfg.store.data, "index")
		return fmt.Errorf("the address index in %s was built before its Electrum columns existed; remove that directory and rebuild it: 'utxostore import --index --data %s FILE...' with the block files from height 0, or serve --index and give it the blocks ('utxostore import --server ADDR FILE...', or --peer, which asks the node)", dir, cfg.store.data)
	}
	return nil
}
