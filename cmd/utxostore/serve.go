package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/server"
	"github.com/utxostore/utxostore/utxo"
)

const serveHelp = `Usage: utxostore serve [flags]

Serves the store: gRPC for every store operation (see proto/), HTTP/JSON in
Blockbook's REST shape (/api/v2/tx/{txid}, /api/v2/block/{height},
/api/status), Prometheus metrics (/metrics) and health (/health/live,
/health/ready).

It listens on loopback by default. On any other address it refuses to start
without --token, which every mutating RPC must then send as
"authorization: Bearer <token>". --tls-cert/--tls-key turn on TLS.

Once listening it prints one line on stderr:
  utxostore serve: listening grpc=HOST:PORT http=HOST:PORT
On SIGTERM or Ctrl-C it stops accepting, lets in-flight requests finish
(up to --shutdown-timeout), checkpoints and closes the store.

With --peer it follows a Bitcoin node over the P2P protocol as 'utxostore
sync' does, /health/ready (gRPC Health) fails while the store is more than
--ready-max-behind blocks behind it, and /api/v2/sendtx/{hex} (gRPC
SendTx) stores a transaction as unmined (refusing a double spend) and
relays it to the node.

Settings come from flags, the environment and --config; run
'utxostore config' to see the effective ones.

Flags:
`

func runServe(ctx context.Context, args []string) error {
	cfg := newServeConfig("serve")
	cfg.fs.Usage = func() { fmt.Fprint(cfg.fs.Output(), serveHelp); cfg.fs.PrintDefaults() }
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
	store, err := cfg.store.open(ctx)
	if err != nil {
		return err
	}
	if store.UncleanShutdown {
		fmt.Fprintln(os.Stderr, "utxostore serve: the previous run did not close the store; the engine recovered its log")
	}
	idx, err := cfg.store.openIndex()
	if err != nil {
		store.Close()
		return err
	}
	return serveStore(ctx, cfg, store, idx, nil)
}

// serveStore serves an open store (and the address index, when not nil)
// until ctx ends, then shuts down and closes them. ready, when set, runs
// once both listeners are bound.
func serveStore(ctx context.Context, cfg *serveConfig, store *utxo.DB, idx *index.Index, ready func(grpcAddr, httpAddr string)) (err error) {
	defer func() {
		if closeErr := store.Close(); closeErr != nil {
			err = errors.Join(err, fmt.Errorf("closing the store: %w", closeErr))
		}
		if idx != nil {
			if closeErr := idx.Close(); closeErr != nil {
				err = errors.Join(err, fmt.Errorf("closing the address index: %w", closeErr))
			}
		}
	}()
	opts := cfg.serverOptions()
	opts.ExternalAbove = store.Options().MaxTxSizeInStore
	following, err := newDaemonFollower(cfg, store, idx)
	if err != nil {
		return err
	}
	defer following.stop() // before the store closes
	if following != nil {
		opts.Relay = following.fol.Relay
	}
	srv, err := server.New(following.backend(server.NewBackend(store, idx)), opts)
	if err != nil {
		return usagef("%v", err)
	}
	if err := srv.Start(); err != nil {
		return err
	}
	following.start(ctx, srv.Metrics().Registry)
	fmt.Fprintf(os.Stderr, "utxostore serve: listening grpc=%s http=%s\n", srv.GRPCAddr(), srv.HTTPAddr())
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
	fmt.Fprintln(os.Stderr, "utxostore serve: shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
	defer cancel()
	if shutdownErr := srv.Shutdown(shutdownCtx); shutdownErr != nil {
		fmt.Fprintf(os.Stderr, "utxostore serve: requests cut off after %s: %v\n", cfg.shutdownTimeout, shutdownErr)
	}
	return err
}
