// Package server is the utxostore daemon: its listeners, their token,
// TLS, timeouts and connection limits, the gRPC service for every store
// operation (grpc_service.go), Prometheus metrics and health, over one
// store. Its HTTP listener serves Blockbook's API of package blockbook,
// mounted beside /metrics and /health.
package server

import (
	"context"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/electrum"
	"github.com/utxostore/utxostore/utxo"
)

// Backend is what the daemon serves: the Store, the block path's
// ConnectBlock, and the reads its APIs make of the store, the address
// index and the block store (blockbook.Reads, and electrum.Reads, which
// holds them). It is an interface so the instrumented decorator can wrap
// every method. Its Changes counts the writes made to the store since it
// was opened, the daemon's and its follower's alike (utxo.DB.Changes).
type Backend interface {
	utxo.Store
	electrum.Reads
	// ConnectBlock carries a block at height along the block path: it is
	// checked, kept, connected and indexed (package blockpath).
	ConnectBlock(ctx context.Context, b *chain.Block, height uint32) error
}
