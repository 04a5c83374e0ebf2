package record

// Preserve (the reference's PreserveTransactions) protects the record from
// deletion until height (parents of unmined transactions must outlive
// them): any DAH is cleared and the DAH
// rule is suspended while PreserveUntil is set. Always returns PRESERVE so
// the caller does the same for the child records and the external blob
// (the reference signals only for external records).
func (r *Record) Preserve(height uint32) Signal {
	r.DeleteAtHeight = 0
	r.PreserveUntil = height
	return SignalPreserve
}

// ExpirePreserve lifts a preservation whose height has been reached and
// re-runs the DAH rule, so a fully spent record becomes prunable again and
// one with unspent outputs stays. A preservation still in force is left
// alone. The reference's ProcessExpiredPreservations (aerospike.go and
// sql.go) instead sets every expired record's DAH to currentHeight +
// retention, spent or not; this store does not, because deleting a record
// that still holds unspent outputs would drop them from the UTXO set.
func (r *Record) ExpirePreserve(currentHeight, retention uint32) Signal {
	if r.PreserveUntil == 0 || r.PreserveUntil > currentHeight {
		return 0
	}
	r.PreserveUntil = 0
	return r.reevaluateDAH(currentHeight, retention)
}
