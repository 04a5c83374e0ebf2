package record

import "testing"

func TestMarkOnLongestChainTransitions(t *testing.T) {
	mark := func(on bool, height uint32) func(*Record) (Signal, error) {
		return noErr(func(r *Record) Signal { r.MarkOnLongestChain(on, height); return 0 })
	}
	allSpent := func(r *Record) { spentAt(r, 0, out0, spA); spentAt(r, 2, out2, spB) }
	runTransitions(t, []transition{
		{name: "off the longest chain: unmined since now", op: mark(false, cur), want: func(r *Record) { r.UnminedSince = cur }},
		{name: "off at height 0 still reads as unmined", op: mark(false, 0), want: func(r *Record) { r.UnminedSince = 1 }},
		{name: "already unmined: unmined since now", setup: func(r *Record) { r.UnminedSince = 150 }, op: mark(false, cur), want: func(r *Record) { r.UnminedSince = cur }},
		{name: "back on the longest chain, DAH untouched", setup: func(r *Record) { allSpent(r); r.UnminedSince = 150; r.DeleteAtHeight = 400 },
			op: mark(true, cur), want: func(r *Record) { r.UnminedSince = 0 }},
		{name: "off the longest chain keeps the DAH", setup: func(r *Record) { allSpent(r); r.DeleteAtHeight = 400 },
			op: mark(false, cur), want: func(r *Record) { r.UnminedSince = cur }},
		{name: "child record untouched", setup: func(r *Record) {
			*r = Record{TxID: r.TxID, Index: 1, FirstVout: 3, Utxos: []Entry{NewUnspentEntry(out0)}, RecordUtxos: 1}
		}, op: mark(false, cur)},
	})
}
