package record

import (
	"slices"

	"github.com/utxostore/utxostore/engine"
)

// Terms returns the record's index terms, the few values an engine
// indexes it by, so it can answer "records to prune at height h",
// "unmined transactions since a..b" and order spills, without ever
// decoding a record itself.
func (r *Record) Terms() engine.Terms {
	t := engine.Terms{
		UnminedSince:   r.UnminedSince,
		DeleteAtHeight: r.DeleteAtHeight,
		PreserveUntil:  r.PreserveUntil,
		Consumed:       r.ownOutputsSpent(),
	}
	if len(r.BlockHeights) > 0 {
		t.ProducedAt = slices.Max(r.BlockHeights)
	}
	return t
}
