// Package storetest is the conformance suite of the utxo.Store interface:
// the same tests run on a store opened in process (package utxo's tests,
// on every engine) and on a client of the daemon over a loopback socket
// (package server's tests), so that the gRPC layer, its conversions and
// the client carry every outcome, option and typed error of the store.
package storetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// Opener opens a fresh, empty store with opts for one test and closes it
// when the test ends.
type Opener func(t testing.TB, opts utxo.Options) utxo.Store

// Run runs every test of the suite on stores from open.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"CreateAndGet", testCreateAndGet},
		{"CreateOptionsTakeEffect", testCreateOptionsTakeEffect},
		{"SpendOutcomes", testSpendOutcomes},
		{"SpendChecksTheClaimedUTXOHash", testSpendChecksTheClaimedUTXOHash},
		{"CoinbaseMaturity", testCoinbaseMaturity},
		{"LockedRefusesSpendsUnlessIgnored", testLockedRefusesSpendsUnlessIgnored},
		{"FreezeUnfreezeReassign", testFreezeUnfreezeReassign},
		{"GetSpendStatuses", testGetSpendStatuses},
		{"MinedBatchAndDelete", testMinedBatchAndDelete},
		{"UnminedIteratorAndQueries", testUnminedIteratorAndQueries},
		{"ConflictingSets", testConflictingSets},
		{"PreservationAndHeights", testPreservationAndHeights},
		{"PaginatedTransaction", testPaginatedTransaction},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

var ctx = context.Background()

// script returns a distinct locking script for label.
func script(label string) []byte {
	h := sha256.Sum256([]byte(label))
	return append([]byte{0x76, 0xa9, 0x14}, append(h[:20], 0x88, 0xac)...)
}

// newTx builds a transaction spending from (a coinbase when from is nil)
// into n outputs of value each; tag makes it unique.
func newTx(tag string, from []wire.OutPoint, n int, value int64) *chain.Tx {
	msg := wire.NewMsgTx(1)
	if from == nil {
		from = []wire.OutPoint{{Index: 0xffffffff}}
	}
	for _, op := range from {
		msg.AddTxIn(&wire.TxIn{PreviousOutPoint: op, SignatureScript: []byte(tag), Sequence: 0xffffffff})
	}
	for i := 0; i < n; i++ {
		msg.AddTxOut(&wire.TxOut{Value: value, PkScript: script(fmt.Sprintf("%s/%d", tag, i))})
	}
	return chain.NewTx(msg)
}

func out(tx *chain.Tx, vout uint32) wire.OutPoint { return wire.OutPoint{Hash: tx.ID, Index: vout} }

func mined(height uint32) utxo.CreateOption {
	return utxo.WithMinedBlockInfo(model.MinedBlockInfo{BlockID: height + 1, BlockHeight: height, OnLongestChain: true})
}

func mustCreate(t testing.TB, s utxo.Store, tx *chain.Tx, height uint32, opts ...utxo.CreateOption) {
	t.Helper()
	if _, err := s.Create(ctx, tx, height, opts...); err != nil {
		t.Fatalf("create %s: %v", tx.ID, err)
	}
}

func mustGet(t testing.TB, s utxo.Store, txid chainhash.Hash) *utxo.Meta {
	t.Helper()
	m, err := s.Get(ctx, txid)
	if err != nil {
		t.Fatalf("get %s: %v", txid, err)
	}
	return m
}

// must fails the test on err.
func must(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// wantCode fails unless err carries want's code.
func wantCode(t testing.TB, err error, want *model.Error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got error %v, want %s", err, want.Code)
	}
}

// parentAndSpender stores a mined two-output parent at height 10 and
// returns it with a spender of its output 0.
func parentAndSpender(t *testing.T, s utxo.Store, opts ...utxo.CreateOption) (*chain.Tx, *chain.Tx) {
	t.Helper()
	parent := newTx("parent", []wire.OutPoint{{Hash: chainhash.Hash{0xaa}}}, 2, 10e8)
	mustCreate(t, s, parent, 10, append([]utxo.CreateOption{mined(10)}, opts...)...)
	return parent, newTx("child", []wire.OutPoint{out(parent, 0)}, 1, 9e8)
}

func hashes(txs ...*chain.Tx) []chainhash.Hash {
	out := make([]chainhash.Hash, len(txs))
	for i, tx := range txs {
		out[i] = tx.ID
	}
	return out
}
