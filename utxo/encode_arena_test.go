package utxo

import (
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/utxo/record"
)

// BenchmarkEncodeArenaWideRecord encodes a decoded record of 20,000
// outputs (660 KB, more than an arena chunk) through the arena, as an
// update of such a record does: the cost must be one copy of the record.
func BenchmarkEncodeArenaWideRecord(b *testing.B) {
	hashes := make([]*chainhash.Hash, record.DefaultUtxoBatchSize)
	for i := range hashes {
		h := chainhash.Hash(sha256.Sum256(fmt.Appendf(nil, "wide/%d", i)))
		hashes[i] = &h
	}
	recs, err := record.Build(record.BuildParams{TxID: chainhash.Hash{1}, UtxoHashes: hashes, BatchSize: len(hashes)})
	if err != nil {
		b.Fatal(err)
	}
	r, err := record.DecodeForUpdate(recs[0].Encode())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(recs[0].Encode())))
	for b.Loop() {
		var a encodeArena
		a.encode(r)
		a.release()
	}
}
