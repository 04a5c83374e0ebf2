package record

// MarkOnLongestChain (the reference's MarkTransactionsOnLongestChain) records whether
// the block holding the transaction is on the longest chain: on it, the
// transaction is mined (UnminedSince 0); off it, it is unmined since
// currentHeight, overwriting an earlier UnminedSince, as the reference's
// aerospike/longest_chain.go writes the store height unconditionally
// (unminedSinceHeight keeps it above 0).
//
// The delete-at-height is left alone: the DAH rule needs the transaction's
// blocks, not the longest chain (see reevaluateDAH), and the reference's
// longest-chain update (aerospike/longest_chain.go) does not touch it
// either.
func (r *Record) MarkOnLongestChain(onLongestChain bool, currentHeight uint32) {
	if !r.IsMaster() {
		return
	}
	if onLongestChain {
		r.UnminedSince = 0
	} else {
		r.UnminedSince = unminedSinceHeight(currentHeight)
	}
}

// unminedSinceHeight is the UnminedSince of a transaction stored, or
// returned, off the longest chain at height h. UnminedSince 0 means "mined"
// to every reader (the unmined index, the set's walk), so height 0 is
// written as 1: an unmined transaction never reads as mined.
func unminedSinceHeight(h uint32) uint32 { return max(h, 1) }
