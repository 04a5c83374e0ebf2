package record

// MarkOnLongestChain (seed: MarkTransactionsOnLongestChain) records whether
// the block holding the transaction is on the longest chain: on it, the
// transaction is mined (UnminedSince 0); off it, it is unmined since
// currentHeight, as a transaction first seen then. The DAH rule follows,
// since only transactions mined on the longest chain may be scheduled.
func (r *Record) MarkOnLongestChain(onLongestChain bool, currentHeight, retention uint32) Signal {
	if !r.IsMaster() {
		return 0
	}
	switch {
	case onLongestChain:
		r.UnminedSince = 0
	case r.UnminedSince == 0:
		r.UnminedSince = max(currentHeight, 1)
	}
	return r.reevaluateDAH(currentHeight, retention)
}
