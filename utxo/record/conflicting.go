package record

import (
	"slices"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// SetConflicting marks (or unmarks) the transaction as a double spend. A
// conflicting record is scheduled for deletion at currentHeight+retention
// straight away (DAHSET), as teranode.lua's setConflicting does through
// setDeleteAtHeight; unmarking re-runs the normal DAH rule. The store calls
// it on every record of the transaction, where the reference's
// aerospike/conflicting.go marks only the master: a spend routed to a child
// record then meets the flag too.
func (r *Record) SetConflicting(conflicting bool, currentHeight, retention uint32) Signal {
	r.Conflicting = conflicting
	return r.reevaluateDAH(currentHeight, retention)
}

// AddConflictingChild records that child, a spender of this transaction,
// is conflicting. It reports whether the child was new.
func (r *Record) AddConflictingChild(child chainhash.Hash) bool {
	if slices.Contains(r.ConflictingChildren, child) {
		return false
	}
	r.ConflictingChildren = append(r.ConflictingChildren, child)
	return true
}

// AddDeletedChild records that child, a spender of outputs of this record,
// has been deleted (the pruner calls it on the parent's records). It
// reports whether the child was new.
func (r *Record) AddDeletedChild(child chainhash.Hash) bool {
	if slices.Contains(r.DeletedChildren, child) {
		return false
	}
	r.DeletedChildren = append(r.DeletedChildren, child)
	return true
}
