package server_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/utxostore/utxostore/blob"
	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/client"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/server"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/storetest"
)

// TestStoreConformanceThroughTheDaemon runs the Store interface's
// conformance suite on a client of the daemon: every call crosses the
// client, the protobuf conversions, a real loopback TCP socket, the gRPC
// service and the instrumented backend before it reaches the store.
func TestStoreConformanceThroughTheDaemon(t *testing.T) {
	storetest.Run(t, openThroughTheDaemon)
}

// openThroughTheDaemon serves a fresh store with opts and returns a client
// dialled to it.
func openThroughTheDaemon(t testing.TB, opts utxo.Options) utxo.Store {
	t.Helper()
	_, c := serveForTest(t, newStore(t, opts), server.Options{})
	return c
}

// newStore opens a store with opts on a fresh memory engine and a file
// blob store, closed when the test ends (a store the test closed already
// is fine).
func newStore(t testing.TB, opts utxo.Options) *utxo.DB {
	t.Helper()
	blobs, err := blob.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	opts.Blobs = blobs
	db, err := utxo.Open(context.Background(), memory.New(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil && !errors.Is(err, engine.ErrClosed) {
			t.Errorf("closing the store: %v", err)
		}
	})
	return db
}

// serveForTest serves db with opts on loopback ports the kernel picks, and
// returns the daemon and a client dialled to it; both stop when the test
// ends.
func serveForTest(t testing.TB, db *utxo.DB, opts server.Options) (*server.Server, *client.Client) {
	t.Helper()
	opts.Network = "regtest"
	rules, err := chain.NetworkRules(opts.Network, false)
	if err != nil {
		t.Fatal(err)
	}
	path, err := blockpath.Open(context.Background(), blockpath.Config{Store: db, Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	return servePathForTest(t, path, opts)
}

// servePathForTest serves the stores of path with opts, as serveForTest
// does its store.
func servePathForTest(t testing.TB, path *blockpath.Path, opts server.Options) (*server.Server, *client.Client) {
	t.Helper()
	return serveBackendForTest(t, server.NewBackend(path), opts)
}

// serveBackendForTest is servePathForTest over any backend.
func serveBackendForTest(t testing.TB, backend server.Backend, opts server.Options) (*server.Server, *client.Client) {
	t.Helper()
	opts.GRPCAddr, opts.HTTPAddr, opts.Engine = "127.0.0.1:0", "127.0.0.1:0", "memory"
	srv, err := server.New(backend, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(srv.GRPCAddr(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("closing the client: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("stopping the daemon: %v", err)
		}
	})
	return srv, c
}
