// Package workload produces the operation streams the benchmark replays: a
// deterministic synthetic chain (Generate) and the replay of real block
// files (FromFiles). Both are a sequence of Op values, serialised by Writer
// so that the stream is generated once and replayed identically against
// every engine, and so that determinism can be checked by hashing bytes.
package workload

import (
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo"
)

// Kind says what an Op asks of the store.
type Kind uint8

// The operation kinds. Each maps to public store calls (see package driver).
const (
	// Submit is an unmined transaction arriving: Spend its inputs, then
	// Create it (the validator's order). Chains of unmined transactions
	// arise when a submitted transaction spends one submitted before it.
	Submit Kind = iota + 1
	// Connect is ConnectBlock. Its non-coinbase transactions were all
	// submitted before, so the call mostly marks them mined (set-mined),
	// unless the Op is Fresh.
	Connect
	// Disconnect is DisconnectBlock of the tip, part of a reorganisation.
	Disconnect
	// DoubleSpend is a Spend that must be refused: input Input spends an
	// output already spent, and the store must answer SPENT for it and
	// leave every other input untouched.
	DoubleSpend
	// Read is a batch read of outpoints that must all be unspent.
	Read
	// Apply is the replay of a transaction whose parents may be missing
	// (block files that do not start at genesis): Create it as mined at
	// Height, then Spend only the inputs listed in Inputs (the others name
	// outputs the store never saw and are skipped, and counted).
	Apply
	// Measure marks the end of the warm-up: timings start here.
	Measure
)

var kindNames = [...]string{Submit: "submit", Connect: "connect", Disconnect: "disconnect",
	DoubleSpend: "double-spend", Read: "read", Apply: "apply", Measure: "measure"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "unknown"
}

// Op is one operation of a stream. Only the fields of its Kind are set.
type Op struct {
	Kind Kind
	// Tx: Submit, DoubleSpend, Apply.
	Tx *chain.Tx
	// Input: DoubleSpend, the input expected to be refused with SPENT.
	Input uint32
	// Inputs: Apply, the inputs to spend.
	Inputs []uint32
	// Height: Apply, the height the transaction is mined at.
	Height uint32
	// Block: Connect, Disconnect.
	Block *utxo.Block
	// Fresh: Connect, the block's transactions were never submitted, so
	// ConnectBlock creates and spends them all, as a node catching up
	// does (the synthetic warm-up).
	Fresh bool
	// Outpoints: Read.
	Outpoints []wire.OutPoint
	// Live is, after a Connect or the last Apply of a block, the number of
	// unspent outputs of the longest chain according to the generator; it
	// is the x axis of the throughput chart. Zero elsewhere.
	Live uint64
}
