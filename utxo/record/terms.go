package record

import "slices"

// Terms are the few values an engine indexes a record by, so it can answer
// "records to prune at height h", "unmined transactions since a..b" and
// order spills, without ever decoding a record itself.
type Terms struct {
	UnminedSince   uint32
	DeleteAtHeight uint32
	PreserveUntil  uint32
	// ProducedAt is the highest height of a block that mined the
	// transaction, 0 when unmined.
	ProducedAt uint32
	// Consumed: every output stored in this record is spent.
	Consumed bool
}

// Terms returns the record's index terms.
func (r *Record) Terms() Terms {
	t := Terms{
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
