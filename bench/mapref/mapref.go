// Package mapref is the physical reference of the benchmark: the same
// logical UTXO operations on a plain Go map, with no durability and no
// records, so that each engine's cost can be read against the cost of the
// bare data structure. It also checks each operation's expected outcome and
// computes the digest of utxo.Summary, so every engine's final state can be
// compared against it.
package mapref

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/bench/internal/arena"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/internal/benchmetric"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// txState is what the set knows of one transaction.
type txState struct {
	// first is the arena index of output 0; the tx's outputs follow it,
	// n of them (stored or not), so the digest walks them in vout order.
	first, n uint32
	mined    bool // on the longest chain: its unspent outputs are in the digest
	coinbase bool
}

// The states of an output other than "spent by spenders[state-1]".
const (
	unspent   uint32 = 0
	notStored uint32 = ^uint32(0) // a data output: never a UTXO
)

// output is one output of a created transaction: 16 bytes, no pointer, so
// that 50 million of them cost 800 MB and nothing for the collector to scan.
type output struct {
	value     uint64
	scriptLen uint32
	state     uint32 // unspent, notStored, or 1 + the index of its spender
}

// Set is a minimal UTXO set: map[outpoint] to an index into an arena of
// outputs, plus the mined flag of each transaction (shared by its outputs)
// that the digest needs. Arenas of fixed-size chunks hold the transactions,
// outputs and spenders, so the set grows without copying and its per-UTXO
// cost is one map slot and one 16-byte output.
type Set struct {
	outs     map[wire.OutPoint]uint32
	txs      map[chainhash.Hash]uint32
	txState  arena.Arena[txState]
	outputs  arena.Arena[output]
	spenders arena.Arena[model.SpendingData]
}

// New returns an empty set.
func New() *Set {
	return &Set{outs: map[wire.OutPoint]uint32{}, txs: map[chainhash.Hash]uint32{}}
}

// Create adds tx and its outputs (those the store keeps as UTXOs) unless
// it is already there; mined says whether it is on the longest chain.
func (s *Set) Create(tx *chain.Tx, mined bool) error {
	if i, ok := s.txs[tx.ID]; ok {
		t := s.txState.At(i)
		t.mined = t.mined || mined
		return model.ErrTxExists
	}
	first := s.outputs.Len()
	s.txs[tx.ID] = s.txState.Add(txState{first: first, n: uint32(len(tx.Msg.TxOut)), mined: mined, coinbase: tx.IsCoinbase()})
	for vout, out := range tx.Msg.TxOut {
		o := output{value: uint64(out.Value), scriptLen: uint32(len(out.PkScript))}
		if !utxo.StoredAsUTXO(out) {
			o.state = notStored
		}
		i := s.outputs.Add(o)
		if o.state != notStored {
			s.outs[wire.OutPoint{Hash: tx.ID, Index: uint32(vout)}] = i
		}
	}
	return nil
}

// Spend spends the listed inputs of tx (all of them when inputs is nil),
// all or nothing, like utxo.DB.Spend: errs[i] is the outcome of the i-th
// spend, with utxo's error sentinels. Spending again with the same spender
// succeeds and changes nothing.
func (s *Set) Spend(tx *chain.Tx, inputs []uint32) (errs []error, err error) {
	if tx.IsCoinbase() {
		return nil, nil
	}
	if inputs == nil {
		inputs = make([]uint32, len(tx.Msg.TxIn))
		for i := range inputs {
			inputs[i] = uint32(i)
		}
	}
	errs = make([]error, len(inputs))
	var applied []*output
	for i, vin := range inputs {
		prev := tx.Msg.TxIn[vin].PreviousOutPoint
		idx, found := s.outs[prev]
		by := model.SpendingData{TxID: tx.ID, Vin: vin}
		var o *output
		if found {
			o = s.outputs.At(idx)
		}
		switch {
		case !found:
			if _, ok := s.txs[prev.Hash]; ok {
				errs[i] = model.ErrUtxoNotFound
			} else {
				errs[i] = model.ErrTxNotFound
			}
		case o.state != unspent && *s.spenders.At(o.state - 1) != by:
			errs[i] = model.ErrSpent
		case o.state == unspent:
			o.state = 1 + s.spenders.Add(by)
			applied = append(applied, o)
		}
		if errs[i] != nil && err == nil {
			err = fmt.Errorf("input %d of %s (%s): %w", vin, tx.ID, prev, errs[i])
		}
	}
	if err != nil {
		for _, o := range applied {
			o.state = unspent
		}
	}
	return errs, err
}

// unspend undoes the spends tx's inputs made.
func (s *Set) unspend(tx *chain.Tx) {
	if tx.IsCoinbase() {
		return
	}
	for vin, in := range tx.Msg.TxIn {
		idx, ok := s.outs[in.PreviousOutPoint]
		if !ok {
			continue
		}
		if o := s.outputs.At(idx); o.state != unspent && *s.spenders.At(o.state - 1) == (model.SpendingData{TxID: tx.ID, Vin: uint32(vin)}) {
			o.state = unspent
		}
	}
}

// Connect applies ConnectBlock's semantics: create the block's new
// transactions, spend every input, mark all of them mined.
func (s *Set) Connect(b *utxo.Block) error {
	for _, tx := range b.Txs {
		if err := s.Create(tx, true); err != nil && err != model.ErrTxExists {
			return err
		}
	}
	for _, tx := range b.Txs {
		if _, err := s.Spend(tx, nil); err != nil {
			return fmt.Errorf("block %s at height %d: %w", b.Hash, b.Height, err)
		}
	}
	return nil
}

// Disconnect applies DisconnectBlock's: undo the block's spends, return its
// transactions to unmined, delete its coinbase. A deleted coinbase's
// outputs stay in the arena, unreachable: reorgs are rare and shallow.
func (s *Set) Disconnect(b *utxo.Block) {
	for i := len(b.Txs) - 1; i >= 0; i-- {
		s.unspend(b.Txs[i])
	}
	for _, tx := range b.Txs {
		i, ok := s.txs[tx.ID]
		if !ok {
			continue
		}
		t := s.txState.At(i)
		t.mined = false
		if t.coinbase {
			delete(s.txs, tx.ID)
			for vout := range tx.Msg.TxOut {
				delete(s.outs, wire.OutPoint{Hash: tx.ID, Index: uint32(vout)})
			}
		}
	}
}

// Unspent reports whether op is a stored, unspent output.
func (s *Set) Unspent(op wire.OutPoint) bool {
	idx, ok := s.outs[op]
	return ok && s.outputs.At(idx).state == unspent
}

// Summary is the digest of utxo.Summary over this set, and the minimal
// serialized size of the set: benchmetric.MinimalUTXOBytes summed over its
// unspent outputs.
type Summary struct {
	Utxos        uint64 `json:"utxos"`
	Satoshis     uint64 `json:"satoshis"`
	MinimalBytes uint64 `json:"minimal_bytes"`
	Digest       string `json:"digest"`
}

// Summary computes the digest exactly as utxo.Summary does: SHA-256 of
// "<txid>:<vout>:<satoshis>\n" for every unspent output of a mined
// transaction, txid as displayed, sorted by displayed txid then vout. The
// displayed txid is the hash's bytes reversed, in hex, so sorting the
// reversed hashes sorts the lines; vouts are walked in order within a
// transaction. Only one entry per mined transaction is held, never a
// line per UTXO.
func (s *Set) Summary() Summary {
	type txLine struct {
		display chainhash.Hash // the txid's bytes in display order
		tx      uint32         // its index in txState
	}
	lines := make([]txLine, 0, len(s.txs))
	for id, i := range s.txs {
		if s.txState.At(i).mined {
			var l txLine
			for j := range id {
				l.display[j] = id[len(id)-1-j]
			}
			l.tx = i
			lines = append(lines, l)
		}
	}
	slices.SortFunc(lines, func(a, b txLine) int { return bytes.Compare(a.display[:], b.display[:]) })
	h := sha256.New()
	var sum Summary
	buf := make([]byte, 0, 128)
	var txid [2 * chainhash.HashSize]byte
	for _, l := range lines {
		hex.Encode(txid[:], l.display[:])
		t := s.txState.At(l.tx)
		for vout := range t.n {
			o := s.outputs.At(t.first + vout)
			if o.state != unspent {
				continue
			}
			sum.Utxos++
			sum.Satoshis += o.value
			sum.MinimalBytes += benchmetric.MinimalUTXOBytes(int(o.scriptLen))
			buf = append(buf[:0], txid[:]...)
			buf = append(buf, ':')
			buf = strconv.AppendUint(buf, uint64(vout), 10)
			buf = append(buf, ':')
			buf = strconv.AppendUint(buf, o.value, 10)
			buf = append(buf, '\n')
			h.Write(buf)
		}
	}
	sum.Digest = hex.EncodeToString(h.Sum(nil))
	return sum
}
