package record

import (
	"slices"

	"github.com/utxostore/utxostore/utxo/model"
)

// SetMined records that the block in info mined the transaction (the
// reference's SetMinedMulti), or with info.UnsetMined that it no longer
// does.
//
// currentHeight is the height of the next block (the store height + 1,
// the reference's thisBlockHeight in aerospike/set_mined.go).
//
//   - The block reference is added once per BlockID (or removed).
//   - With at least one block left and info.OnLongestChain, UnminedSince
//     becomes 0; with no block left it becomes currentHeight (at least 1),
//     as teranode.lua's setMined does. A tx whose only blocks are off the
//     longest chain keeps its previous UnminedSince.
//   - Locked and Creating are cleared: mining completes any unfinished
//     commit (the third recovery path of the lock record pattern, see
//     LockRecordIndex).
//   - The DAH rule runs against currentHeight, like every other operation
//     and like teranode.lua's setMined, whatever the height of the block
//     named in info.
//
// On a child record only Locked and Creating change: block references live
// on the master.
func (r *Record) SetMined(info model.MinedBlockInfo, currentHeight, retention uint32) Signal {
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
		r.UnminedSince = unminedSinceHeight(currentHeight)
	}
	return r.reevaluateDAH(currentHeight, retention)
}
