package record

import (
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/utxo/model"
)

// Freeze marks the unspent output at offset as frozen by the alert system:
// its spending data becomes 36 × 0xFF and Spend refuses it with FROZEN.
// Errors: UTXO_NOT_FOUND, UTXO_HASH_MISMATCH, ALREADY_FROZEN, and SPENT
// (with the spender) when a real transaction already spent it.
//
// This is teranode.lua's freeze at commit fb3d000, where only an unspent
// output can be frozen; later versions of the reference add consensus
// freeze windows (from/until heights, policy expiry) that let a freeze be
// recorded on a spent output.
func (r *Record) Freeze(offset uint32, utxoHash chainhash.Hash) error {
	e, err := r.entryAt(offset, &utxoHash)
	if err != nil {
		return err
	}
	if e.IsFrozen() {
		return r.outputError(model.CodeAlreadyFrozen, offset, "output is already frozen")
	}
	if existing, spent := e.SpendingData(); spent {
		err := r.outputError(model.CodeSpent, offset, "cannot freeze a spent output")
		err.Spending = &existing
		return err
	}
	r.Utxos[offset] = NewFrozenEntry(utxoHash)
	r.Frozen = true
	return nil
}

// UnFreeze restores a frozen output to unspent. UTXO_NOT_FROZEN when it is
// not frozen.
func (r *Record) UnFreeze(offset uint32, utxoHash chainhash.Hash) error {
	e, err := r.entryAt(offset, &utxoHash)
	if err != nil {
		return err
	}
	if !e.IsFrozen() {
		return r.outputError(model.CodeUtxoNotFrozen, offset, "output is not frozen")
	}
	r.Utxos[offset] = NewUnspentEntry(utxoHash)
	r.recomputeFrozen()
	return nil
}
