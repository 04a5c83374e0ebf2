package model

import (
	"slices"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// Outpoint names output Vout of transaction TxID.
type Outpoint struct {
	TxID chainhash.Hash
	Vout uint32
}

// TxInpoints lists the outpoints a transaction spends, grouped by parent:
// ParentTxHashes[i] is a parent and Idxs[i] the output indices of it that
// are spent, both in first-seen input order. Grouping lets a caller touch
// each parent record once.
type TxInpoints struct {
	ParentTxHashes []chainhash.Hash
	Idxs           [][]uint32
}

// NewTxInpoints groups outpoints (in input order) by parent, keeping the
// order in which each parent is first seen and, within a parent, the input
// order of its indices.
func NewTxInpoints(outpoints []Outpoint) TxInpoints {
	var t TxInpoints
	// A map finds a parent among many; most transactions have a handful
	// of inputs, where a scan is cheaper than building one.
	var pos map[chainhash.Hash]int
	if len(outpoints) > smallParentScan {
		pos = make(map[chainhash.Hash]int, len(outpoints))
	}
	for _, op := range outpoints {
		i, ok := 0, false
		if pos != nil {
			i, ok = pos[op.TxID]
		} else {
			i = slices.Index(t.ParentTxHashes, op.TxID)
			ok = i >= 0
		}
		if !ok {
			i = len(t.ParentTxHashes)
			if pos != nil {
				pos[op.TxID] = i
			}
			t.ParentTxHashes = append(t.ParentTxHashes, op.TxID)
			t.Idxs = append(t.Idxs, nil)
		}
		t.Idxs[i] = append(t.Idxs[i], op.Vout)
	}
	return t
}

// smallParentScan is the number of inputs up to which NewTxInpoints finds a
// parent by scanning rather than through a map.
const smallParentScan = 16

// Len is the number of outpoints.
func (t TxInpoints) Len() int {
	n := 0
	for _, idx := range t.Idxs {
		n += len(idx)
	}
	return n
}

// Outpoints flattens t back to parent-then-index order.
func (t TxInpoints) Outpoints() []Outpoint {
	out := make([]Outpoint, 0, t.Len())
	for i, h := range t.ParentTxHashes {
		if i >= len(t.Idxs) {
			break
		}
		for _, v := range t.Idxs[i] {
			out = append(out, Outpoint{TxID: h, Vout: v})
		}
	}
	return out
}

// Clone returns a deep copy.
func (t TxInpoints) Clone() TxInpoints {
	c := TxInpoints{ParentTxHashes: slices.Clone(t.ParentTxHashes)}
	if t.Idxs != nil {
		c.Idxs = make([][]uint32, len(t.Idxs))
		for i, idx := range t.Idxs {
			c.Idxs[i] = slices.Clone(idx)
		}
	}
	return c
}

// IsEmpty reports whether t lists no parent.
func (t TxInpoints) IsEmpty() bool { return len(t.ParentTxHashes) == 0 && len(t.Idxs) == 0 }
