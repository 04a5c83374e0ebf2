package utxo

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

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

// Sozu runs the update functions of one batch on its shards' goroutines at
// once: concurrent encodings into one arena never overlap.
func TestEncodeArenaConcurrent(t *testing.T) {
	const workers, each = 8, 2000
	var arena encodeArena
	defer arena.release()
	recs := make([][]*record.Record, workers)
	got := make([][][]byte, workers)
	for w := range recs {
		for i := range each {
			tx := coinbaseTx(fmt.Sprintf("w%d/%d", w, i), 1+i%5, 50)
			recs[w] = append(recs[w], &record.Record{TxID: tx.ID, Tx: tx.Raw})
		}
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for _, r := range recs[w] {
				got[w] = append(got[w], arena.encode(r))
			}
		}()
	}
	close(start)
	wg.Wait()
	for w := range workers {
		for i, enc := range got[w] {
			if !bytes.Equal(enc, recs[w][i].Encode()) {
				t.Fatalf("worker %d's encoding %d was overwritten", w, i)
			}
		}
	}
}

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
