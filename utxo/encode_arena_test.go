package utxo

import (
	"bytes"
	"testing"

	"github.com/utxostore/utxostore/utxo/record"
)

// The arena's encodings are the records' encodings, each capped so that
// appending to one cannot reach the next, and none overwritten by those
// encoded after it, a record larger than a chunk included.
func TestEncodeArena(t *testing.T) {
	small := func(tag string) *record.Record {
		tx := coinbaseTx(tag, 3, 50)
		return &record.Record{TxID: tx.ID, Tx: tx.Raw}
	}
	large := &record.Record{TxID: coinbaseTx("large", 1, 1).ID, Tx: bytes.Repeat([]byte{7}, encodeArenaChunk+1)}
	recs := []*record.Record{small("a"), small("b"), large, small("c"), small("d")}
	var arena encodeArena
	defer arena.release()
	var encoded [][]byte
	for _, r := range recs {
		enc := arena.encode(r)
		if !bytes.Equal(enc, r.Encode()) {
			t.Fatalf("arena encoding of %s differs from Encode", r.TxID)
		}
		if cap(enc) != len(enc) {
			t.Fatalf("arena encoding of %s has room to grow: len %d cap %d", r.TxID, len(enc), cap(enc))
		}
		encoded = append(encoded, enc)
	}
	for i, enc := range encoded {
		if !bytes.Equal(enc, recs[i].Encode()) {
			t.Fatalf("encoding %d was overwritten by a later one", i)
		}
	}
}
