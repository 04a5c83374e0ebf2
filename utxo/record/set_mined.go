package record

import "slices"

// CoinbaseMaturity is how many blocks a coinbase's outputs wait: they are
// spendable from mined height + 100.
const CoinbaseMaturity = 100

// MinedBlockInfo names one block that mined (or, with UnsetMined, no longer
// mines) the transaction.
type MinedBlockInfo struct {
	BlockID     uint32
	BlockHeight uint32
	SubtreeIdx  int
	// OnLongestChain: the block is on the longest chain, so the transaction
	// stops being "unmined".
	OnLongestChain bool
	// UnsetMined removes the block instead (it was invalidated / reorged out).
	UnsetMined bool
}

// SetMined records that the block in info mined the transaction (seed:
// SetMinedMulti), or with info.UnsetMined that it no longer does.
//
//   - The block reference is added once per BlockID (or removed).
//   - With at least one block left and info.OnLongestChain, UnminedSince
//     becomes 0; with no block left it becomes currentHeight again (the
//     reference does the same: a tx whose only block is off the longest
//     chain but still listed keeps its previous UnminedSince).
//   - Locked and Creating are cleared: mining completes any unfinished
//     commit (the third recovery path of the lock-record seed).
//   - A coinbase without a maturity height gets block height + 100.
//   - The DAH rule runs against info.BlockHeight, not currentHeight, as the
//     reference does since it found that a lagging tip let records be pruned
//     before their retention had passed.
//
// On a child record only Locked and Creating change: block references live
// on the master.
func (r *Record) SetMined(info MinedBlockInfo, currentHeight, retention uint32) Signal {
	r.Locked = false
	r.Creating = false
	if !r.IsMaster() {
		return 0
	}
	i := slices.Index(r.BlockIDs, info.BlockID)
	switch {
	case info.UnsetMined && i >= 0:
		r.BlockIDs = slices.Delete(r.BlockIDs, i, i+1)
		r.BlockHeights = slices.Delete(r.BlockHeights, i, i+1)
		r.SubtreeIdxs = slices.Delete(r.SubtreeIdxs, i, i+1)
	case !info.UnsetMined && i < 0:
		r.BlockIDs = append(r.BlockIDs, info.BlockID)
		r.BlockHeights = append(r.BlockHeights, info.BlockHeight)
		r.SubtreeIdxs = append(r.SubtreeIdxs, info.SubtreeIdx)
	}
	if len(r.BlockIDs) > 0 {
		if info.OnLongestChain {
			r.UnminedSince = 0
		}
	} else {
		r.UnminedSince = currentHeight
	}
	if r.IsCoinbase && r.SpendingHeight == 0 && !info.UnsetMined {
		r.SpendingHeight = info.BlockHeight + CoinbaseMaturity
	}
	return r.reevaluateDAH(info.BlockHeight, retention)
}
