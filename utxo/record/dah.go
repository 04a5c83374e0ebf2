package record

import "github.com/utxostore/utxostore/utxo/model"

// reevaluateDAH is the one implementation of the delete-at-height rule. Every
// operation that can change its inputs calls it last. In order:
//
//  1. retention 0 disables deletion: nothing changes.
//  2. a record with PreserveUntil set is never scheduled (PreserveUntil
//     clears the DAH when it is set; see ExpirePreserve for the way out).
//  3. a conflicting record is scheduled at height+retention, once: an
//     existing DAH is kept.
//  4. a child record stops here: the caller schedules children together
//     with their master (SetDeleteAtHeight), driven by the master's signals.
//  5. a master whose outputs and child records are all spent, and which is
//     in at least one block, is scheduled at height+retention; an existing
//     earlier DAH is moved later (DAHSET each time it moves). Whether that
//     block is on the longest chain does not matter: teranode.lua's
//     setDeleteAtHeight looks at blockIDs only, and the reference's tests
//     of large externally stored transactions expect a DAH for a
//     transaction off the longest chain.
//  6. otherwise an existing DAH is cleared (DAHUNSET).
//
// Differences from the reference Lua: the reference only returns DAHSET /
// DAHUNSET for external records (the only ones it stores with children)
// and keeps a lastSpentState bin for the child ALLSPENT signal; here the
// DAH signals are returned for every record (the caller knows whether it
// has children or a blob) and ALLSPENT/NOTALLSPENT come from spentSignal.
func (r *Record) reevaluateDAH(height, retention uint32) Signal {
	if retention == 0 || r.PreserveUntil != 0 {
		return 0
	}
	next := height + retention
	if next < height { // overflow: as late as can be said
		next = ^uint32(0)
	}
	if r.Conflicting {
		if r.DeleteAtHeight == 0 {
			r.DeleteAtHeight = next
			return SignalDAHSet
		}
		return 0
	}
	if !r.IsMaster() {
		return 0
	}
	if r.fullySpent() && len(r.BlockIDs) > 0 {
		if r.DeleteAtHeight == 0 || r.DeleteAtHeight < next {
			r.DeleteAtHeight = next
			return SignalDAHSet
		}
		return 0
	}
	if r.DeleteAtHeight != 0 {
		r.DeleteAtHeight = 0
		return SignalDAHUnset
	}
	return 0
}

// spentSignal compares this record's own spent state before and after an
// operation: ALLSPENT when it became fully spent, NOTALLSPENT when it stopped
// being so. On a child record the caller turns these into
// IncrementSpentExtraRecs(+1/-1) on the master.
func spentSignal(before, after bool) Signal {
	switch {
	case !before && after:
		return SignalAllSpent
	case before && !after:
		return SignalNotAllSpent
	}
	return 0
}

// SetDeleteAtHeight sets (height > 0) or clears (height 0) the record's
// delete-at-height directly. The caller uses it to copy a master's DAH to
// its child records after a DAHSET / DAHUNSET signal, and the pruner to
// reschedule. It returns the signal describing the change, if any.
func (r *Record) SetDeleteAtHeight(height uint32) Signal {
	if r.DeleteAtHeight == height {
		return 0
	}
	r.DeleteAtHeight = height
	if height == 0 {
		return SignalDAHUnset
	}
	return SignalDAHSet
}

// IncrementSpentExtraRecs adds delta (normally ±1, on a child's ALLSPENT /
// NOTALLSPENT signal) to the master's count of fully spent child records and
// re-evaluates the DAH rule. The count is clamped to [0, TotalExtraRecs],
// where teranode.lua's incrementSpentExtraRecs refuses a value outside that
// range with INVALID_PARAMETER: the signal reaches the master in a second
// write after the child's, so a call interrupted in between can leave the
// count off by one, and a refusal would then block every later update of
// the master instead of bounding the drift. Only a master record with
// children accepts it (INVALID_PARAMETER).
func (r *Record) IncrementSpentExtraRecs(delta int, currentHeight, retention uint32) (Signal, error) {
	if !r.IsMaster() || r.TotalExtraRecs == 0 {
		return 0, r.recordError(model.CodeInvalidParameter, "spentExtraRecs only exists on a master record with child records")
	}
	n := int64(r.SpentExtraRecs) + int64(delta)
	n = max(0, min(n, int64(r.TotalExtraRecs)))
	r.SpentExtraRecs = uint32(n)
	return r.reevaluateDAH(currentHeight, retention), nil
}
