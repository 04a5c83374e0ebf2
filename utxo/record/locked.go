package record

// SetLocked sets or clears the two-phase-commit lock (a record goes from
// Created & Locked to Unlocked & Unmined). Locking also clears any DAH, as in the reference,
// because a locked transaction is about to be re-validated and must not be
// pruned meanwhile; that returns DAHUNSET so the caller can clear the child
// records and the blob too (the reference clears the records' DAH, each in
// its own setLocked call, but not the blob's).
func (r *Record) SetLocked(locked bool) Signal {
	r.Locked = locked
	if locked && r.DeleteAtHeight != 0 {
		r.DeleteAtHeight = 0
		return SignalDAHUnset
	}
	return 0
}

// SetCreating sets or clears the multi-record creation flag. Phase 2 of the
// lock-record protocol clears it on the children first and on the master
// last; while it is set Spend refuses with UTXO_LOCKED.
func (r *Record) SetCreating(creating bool) { r.Creating = creating }
