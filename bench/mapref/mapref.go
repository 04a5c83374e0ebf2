// Package mapref is the physical reference of the benchmark: the same
// logical UTXO operations on a plain Go map, with no durability and no
// records, so that each engine's cost can be read against the cost of the
// bare data structure. It also checks each operation's expected outcome and
// computes the digest of utxo.Summary, so every engine's final state can be
// compared against it.
package mapref

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/internal/benchmetric"
	"github.com/utxostore/utxostore/utxo"
)

// txState is what the set knows of one transaction.
type txState struct {
	mined    bool // on the longest chain: its unspent outputs are in the digest
	coinbase bool
}

// output is one stored output.
type output struct {
	tx        *txState
	value     uint64
	scriptLen int
	spent     bool
	spender   utxo.SpendingData
}

// Set is a minimal UTXO set: map[outpoint]output, plus the mined flag of
// each transaction (shared by its outputs) that the digest needs.
type Set struct {
	outs map[wire.OutPoint]*output
	txs  map[chainhash.Hash]*txState
}

// New returns an empty set.
func New() *Set {
	return &Set{outs: map[wire.OutPoint]*output{}, txs: map[chainhash.Hash]*txState{}}
}

// Create adds tx and its outputs (those the store keeps as UTXOs) unless
// it is already there; mined says whether it is on the longest chain.
func (s *Set) Create(tx *chain.Tx, mined bool) error {
	if t, ok := s.txs[tx.ID]; ok {
		t.mined = t.mined || mined
		return utxo.ErrTxExists
	}
	t := &txState{mined: mined, coinbase: tx.IsCoinbase()}
	s.txs[tx.ID] = t
	for vout, out := range tx.Msg.TxOut {
		if !utxo.StoredAsUTXO(out) {
			continue
		}
		s.outs[wire.OutPoint{Hash: tx.ID, Index: uint32(vout)}] = &output{tx: t, value: uint64(out.Value), scriptLen: len(out.PkScript)}
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
		o := s.outs[prev]
		by := utxo.SpendingData{TxID: tx.ID, Vin: vin}
		switch {
		case o == nil && s.txs[prev.Hash] == nil:
			errs[i] = utxo.ErrTxNotFound
		case o == nil:
			errs[i] = utxo.ErrUtxoNotFound
		case o.spent && o.spender != by:
			errs[i] = utxo.ErrSpent
		case !o.spent:
			o.spent, o.spender = true, by
			applied = append(applied, o)
		}
		if errs[i] != nil && err == nil {
			err = fmt.Errorf("input %d of %s (%s): %w", vin, tx.ID, prev, errs[i])
		}
	}
	if err != nil {
		for _, o := range applied {
			o.spent, o.spender = false, utxo.SpendingData{}
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
		if o := s.outs[in.PreviousOutPoint]; o != nil && o.spent && o.spender == (utxo.SpendingData{TxID: tx.ID, Vin: uint32(vin)}) {
			o.spent, o.spender = false, utxo.SpendingData{}
		}
	}
}

// Connect applies ConnectBlock's semantics: create the block's new
// transactions, spend every input, mark all of them mined.
func (s *Set) Connect(b *utxo.Block) error {
	for _, tx := range b.Txs {
		if err := s.Create(tx, true); err != nil && err != utxo.ErrTxExists {
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
// transactions to unmined, delete its coinbase.
func (s *Set) Disconnect(b *utxo.Block) {
	for i := len(b.Txs) - 1; i >= 0; i-- {
		s.unspend(b.Txs[i])
	}
	for _, tx := range b.Txs {
		t := s.txs[tx.ID]
		if t == nil {
			continue
		}
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
	o := s.outs[op]
	return o != nil && !o.spent
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
// transaction, txid as displayed, sorted by displayed txid then vout.
func (s *Set) Summary() Summary {
	type line struct {
		txid string
		vout uint32
		o    *output
	}
	lines := make([]line, 0, len(s.outs))
	for op, o := range s.outs {
		if o.tx.mined && !o.spent {
			lines = append(lines, line{op.Hash.String(), op.Index, o})
		}
	}
	slices.SortFunc(lines, func(a, b line) int {
		if a.txid != b.txid {
			if a.txid < b.txid {
				return -1
			}
			return 1
		}
		return int(int64(a.vout) - int64(b.vout))
	})
	h := sha256.New()
	var sum Summary
	buf := make([]byte, 0, 128)
	for _, l := range lines {
		sum.Satoshis += l.o.value
		sum.MinimalBytes += benchmetric.MinimalUTXOBytes(l.o.scriptLen)
		buf = append(buf[:0], l.txid...)
		buf = append(buf, ':')
		buf = strconv.AppendUint(buf, uint64(l.vout), 10)
		buf = append(buf, ':')
		buf = strconv.AppendUint(buf, l.o.value, 10)
		buf = append(buf, '\n')
		h.Write(buf)
	}
	sum.Utxos = uint64(len(lines))
	sum.Digest = hex.EncodeToString(h.Sum(nil))
	return sum
}
