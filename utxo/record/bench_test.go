package record

import (
	"fmt"
	"testing"
)

// BenchmarkSpendWideRecord spends k outputs of a record of 20,000 in one
// read-modify-write, as a consolidating transaction or a block does,
// through a View and on the decoded record: both must stay linear in the
// record's outputs, whatever k.
func BenchmarkSpendWideRecord(b *testing.B) {
	const outputs = DefaultUtxoBatchSize
	hashes := utxoHashes("wide", outputs)
	recs, err := Build(BuildParams{TxID: h("wide"), UtxoHashes: hashes, BatchSize: outputs})
	if err != nil {
		b.Fatal(err)
	}
	enc := recs[0].Encode()
	for _, k := range []int{1, 100, outputs} {
		items := make([]SpendItem, k)
		for i := range items {
			offset := uint32(i * (outputs / k))
			items[i] = SpendItem{Offset: offset, UtxoHash: *hashes[offset], Spending: sd("spender", uint32(i))}
		}
		b.Run(fmt.Sprintf("view/spends=%d", k), func(b *testing.B) {
			for b.Loop() {
				v, err := Inspect(enc)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := v.SpendMulti(items, SpendOptions{}); err != nil {
					b.Fatal(err)
				}
				v.AppendEncode(nil)
			}
		})
		b.Run(fmt.Sprintf("record/spends=%d", k), func(b *testing.B) {
			for b.Loop() {
				r, err := DecodeForUpdate(enc)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := r.SpendMulti(items, SpendOptions{}); err != nil {
					b.Fatal(err)
				}
				r.Encode()
			}
		})
	}
}

// BenchmarkInspectTypicalRecord inspects a record of the usual shape (a
// mined transaction of 600 bytes and two unspent outputs), as every spend
// and set-mined does before it changes the record.
func BenchmarkInspectTypicalRecord(b *testing.B) {
	r := &Record{TxID: h("typical"), Utxos: []Entry{NewUnspentEntry(h("a")), NewUnspentEntry(h("b"))}, RecordUtxos: 2, TotalUtxos: 2,
		CreatedAt: 1_700_000_000_000, Tx: make([]byte, 600), Fee: 2000, SizeInBytes: 600, Version: 2, LockTime: 800000,
		BlockIDs: []uint32{800001}, BlockHeights: []uint32{800000}, SubtreeIdxs: []int{3}}
	enc := r.Encode()
	for b.Loop() {
		if _, err := Inspect(enc); err != nil {
			b.Fatal(err)
		}
	}
}
