package record

import (
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/utxo/model"
)

// UnspendOptions are the context of an unspend.
type UnspendOptions struct {
	// CurrentHeight and Retention feed the DAH rule (see SpendOptions).
	CurrentHeight uint32
	Retention     uint32
	// Expected, when set, is the spender the caller believes it is undoing.
	// If the output is spent by anyone else the unspend is a successful
	// no-op: a rollback must never wipe a spend it does not own. This is
	// this store's own rule: teranode.lua's unspend takes no spending data
	// and clears whatever spend the output holds. The store needs it
	// because Spend is all or nothing and undoes its partial spends, and
	// conflict resolution and cleanup release spends concurrently with new
	// ones; without the check an undo could release a rival's spend.
	Expected *model.SpendingData
	// FlagAsLocked locks the transaction after the unspend (SetLocked(true)),
	// so that during a reorg its outputs wait for re-validation.
	FlagAsLocked bool
}

// Unspend turns the spent output at offset back into an unspent one (block
// reorganisation, validation rollback). Unspending an unspent output is a
// successful no-op; a frozen output is refused with FROZEN. Signals:
// NOTALLSPENT when the record stops being fully spent, DAHUNSET when that
// clears its DAH (and when FlagAsLocked clears one).
func (r *Record) Unspend(offset uint32, utxoHash chainhash.Hash, opts UnspendOptions) (Signal, error) {
	e, err := r.entryAt(offset, &utxoHash)
	if err != nil {
		return 0, err
	}
	if e.IsFrozen() {
		return 0, r.outputError(model.CodeFrozen, offset, "output is frozen")
	}
	var sig Signal
	if existing, spent := e.SpendingData(); spent && (opts.Expected == nil || *opts.Expected == existing) {
		before := r.ownOutputsSpent()
		r.Utxos[offset] = NewUnspentEntry(utxoHash)
		r.SpentUtxos--
		sig = spentSignal(before, r.ownOutputsSpent()) | r.reevaluateDAH(opts.CurrentHeight, opts.Retention)
	}
	if opts.FlagAsLocked {
		sig |= r.SetLocked(true)
	}
	return sig, nil
}
