package record

import (
	"slices"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/utxo/model"
)

// SpendOptions are the context of a spend.
type SpendOptions struct {
	// CurrentHeight is the height of the block being built/validated; it is
	// compared with coinbase maturity and reassignment holds, and schedules
	// the DAH.
	CurrentHeight uint32
	// Retention is the DAH retention in blocks; 0 disables scheduling.
	Retention uint32
	// IgnoreConflicting spends even if the tx is marked conflicting (used
	// when re-validating during conflict resolution).
	IgnoreConflicting bool
	// IgnoreLocked spends even if the tx is locked (block validation).
	IgnoreLocked bool
}

// SpendItem is one output to spend in SpendMulti.
type SpendItem struct {
	Offset   uint32
	UtxoHash chainhash.Hash
	Spending model.SpendingData
}

// Spend marks the output at offset as spent by spending. Checks, in the
// reference order: creating (UTXO_LOCKED), conflicting (CONFLICTING, unless
// ignored), locked (LOCKED, unless ignored), coinbase maturity
// (COINBASE_IMMATURE), then the output: missing (UTXO_NOT_FOUND), other
// hash (UTXO_HASH_MISMATCH), held after a reassignment (FROZEN_UNTIL while
// its UtxoSpendableIn height is >= CurrentHeight, as teranode.lua's
// spendMulti compares them), frozen (FROZEN), spent by someone else (SPENT,
// carrying the existing spender). Spending it again with the same spending
// data succeeds without changing anything, unless that spender has been
// deleted (DeletedChildren): then INVALID_SPEND, as in teranode.lua's
// already-spent branch. On success SpentUtxos grows by one and the result
// may carry ALLSPENT and the DAH signals.
func (r *Record) Spend(offset uint32, utxoHash chainhash.Hash, spending model.SpendingData, opts SpendOptions) (Signal, error) {
	sig, errs, err := r.SpendMulti([]SpendItem{{Offset: offset, UtxoHash: utxoHash, Spending: spending}}, opts)
	if err != nil {
		return 0, err
	}
	if errs != nil {
		return 0, errs[0]
	}
	return sig, nil
}

// SpendMulti spends several outputs of this record in one read-modify-write.
// err refuses the whole batch (a record-level check failed; nothing changed).
// Otherwise each item succeeds or fails on its own, as in the reference:
// itemErrs is nil when all succeeded, else it has one entry per item (nil
// for the items that were applied). The signals describe the net change.
func (r *Record) SpendMulti(items []SpendItem, opts SpendOptions) (sig Signal, itemErrs []error, err error) {
	return r.spendMulti(recordOutputs{r}, items, opts)
}

// outputs is how the spend rule reaches a record's outputs: the decoded
// Utxos of a Record, or the encoded entries of a View. The rule itself,
// spendMulti, reads and changes everything else on the record it runs on.
type outputs interface {
	// at is the entry at offset, nil beyond the outputs.
	at(offset uint32) Entry
	// count is the number of outputs.
	count() int
	// spend puts the spent entry e at offset.
	spend(offset uint32, e Entry)
}

// recordOutputs are a decoded record's outputs.
type recordOutputs struct{ r *Record }

func (o recordOutputs) at(offset uint32) Entry {
	if uint64(offset) < uint64(len(o.r.Utxos)) {
		return o.r.Utxos[offset]
	}
	return nil
}
func (o recordOutputs) count() int                   { return len(o.r.Utxos) }
func (o recordOutputs) spend(offset uint32, e Entry) { o.r.Utxos[offset] = e }

// spendMulti is SpendMulti with the outputs reached through outs; r is the
// record (a View's head) whose counters, flags and DAH it keeps.
func (r *Record) spendMulti(outs outputs, items []SpendItem, opts SpendOptions) (sig Signal, itemErrs []error, err error) {
	if err := r.checkSpendable(opts); err != nil {
		return 0, nil, err
	}
	before := r.ownOutputsSpent()
	changed := false
	for i := range items {
		applied, err := r.spendOne(outs, &items[i], opts.CurrentHeight)
		if err != nil {
			if itemErrs == nil {
				itemErrs = make([]error, len(items))
			}
			itemErrs[i] = err
		}
		changed = changed || applied
	}
	if changed {
		sig = spentSignal(before, r.ownOutputsSpent()) | r.reevaluateDAH(opts.CurrentHeight, opts.Retention)
	}
	return sig, itemErrs, nil
}

// checkSpendable runs the record-level checks shared by every output.
func (r *Record) checkSpendable(opts SpendOptions) *model.Error {
	switch {
	case r.Creating:
		return r.recordError(model.CodeUtxoLocked, "transaction is still being created")
	case r.Conflicting && !opts.IgnoreConflicting:
		return r.recordError(model.CodeConflicting, "transaction is conflicting")
	case r.Locked && !opts.IgnoreLocked:
		return r.recordError(model.CodeLocked, "transaction is locked")
	case r.SpendingHeight > 0 && r.SpendingHeight > opts.CurrentHeight:
		return r.recordError(model.CodeCoinbaseImmature, "coinbase spendable at height %d, current height %d", r.SpendingHeight, opts.CurrentHeight)
	}
	return nil
}

// spendOne applies one output's spend; applied is false for the idempotent
// re-spend and on error (the record is untouched then).
func (r *Record) spendOne(outs outputs, it *SpendItem, currentHeight uint32) (applied bool, err *model.Error) {
	if takes, err := r.spendCheck(outs.at(it.Offset), outs.count(), it, currentHeight); !takes || err != nil {
		return false, err
	}
	outs.spend(it.Offset, NewSpentEntry(it.UtxoHash, it.Spending))
	r.SpentUtxos++
	return true, nil
}

// spendCheck is the per-output rule of a spend, in the reference order
// (see Spend), for e, the entry at it.Offset of the record's count
// outputs (nil beyond them). takes is true when the output is unspent and
// takes the spend; false with a nil error is the idempotent re-spend. It
// reads the outputs only through e and count.
func (r *Record) spendCheck(e Entry, count int, it *SpendItem, currentHeight uint32) (takes bool, err *model.Error) {
	if isFrozenMarker(it.Spending) {
		return false, r.outputError(model.CodeInvalidSpend, it.Offset, "spending data is the frozen marker")
	}
	e, err = r.checkEntry(e, it.Offset, count, &it.UtxoHash)
	if err != nil {
		return false, err
	}
	if h, ok := r.UtxoSpendableIn[it.Offset]; ok && h >= currentHeight {
		return false, r.outputError(model.CodeFrozenUntil, it.Offset, "output is not spendable until after height %d", h)
	}
	if e.IsFrozen() {
		return false, r.outputError(model.CodeFrozen, it.Offset, "output is frozen")
	}
	if existing, ok := e.SpendingData(); ok {
		if existing == it.Spending {
			if slices.Contains(r.DeletedChildren, existing.TxID) {
				err := r.outputError(model.CodeInvalidSpend, it.Offset, "the spending transaction has been deleted")
				err.Spending = new(existing) // a copy: existing stays on the stack
				return false, err
			}
			return false, nil
		}
		err := r.outputError(model.CodeSpent, it.Offset, "already spent")
		err.Spending = new(existing)
		return false, err
	}
	return true, nil
}
