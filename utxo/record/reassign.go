package record

import (
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/utxo/model"
)

// Reassign moves a frozen output to a new UTXO hash (the alert system's
// court-ordered transfer): the entry becomes the unspent newUtxoHash, its
// UtxoSpendableIn becomes blockHeight + spendableAfter, and the move is
// appended to Reassignments. Spend answers FROZEN_UNTIL while that height
// is >= the spend's current height, so the first block that may spend it
// is the one after it.
//
// Only a frozen output can be reassigned (UTXO_NOT_FROZEN otherwise, also
// for a spent one), as in the reference. A record with a reassignment is
// never scheduled for deletion: the reference bumps recordUtxos for that;
// here the rule lives in ownOutputsSpent, keeping RecordUtxos equal to the
// stored entries.
func (r *Record) Reassign(offset uint32, utxoHash, newUtxoHash chainhash.Hash, blockHeight, spendableAfter uint32) error {
	e, err := r.entryAt(offset, &utxoHash)
	if err != nil {
		return err
	}
	if !e.IsFrozen() {
		return r.outputError(model.CodeUtxoNotFrozen, offset, "only a frozen output can be reassigned")
	}
	r.Utxos[offset] = NewUnspentEntry(newUtxoHash)
	if r.UtxoSpendableIn == nil {
		r.UtxoSpendableIn = make(map[uint32]uint32, 1)
	}
	r.UtxoSpendableIn[offset] = blockHeight + spendableAfter
	r.Reassignments = append(r.Reassignments, Reassignment{
		Offset: offset, UtxoHash: utxoHash, NewUtxoHash: newUtxoHash, BlockHeight: blockHeight,
	})
	r.recomputeFrozen()
	return nil
}
