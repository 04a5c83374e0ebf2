package index

import "testing"

// TestFootprintCountsTheColumns: Footprint's entries and live bytes are
// those of Blockbook's columns read straight from Pebble, its digest is
// the same for the same blocks connected one by one or in bulk and changes
// with a block, and its write counters have counted the batches and the
// bulk import's tables.
func TestFootprintCountsTheColumns(t *testing.T) {
	chain := genChain(5, 60)
	one := openTest(t, t.TempDir(), Options{NoSync: true})
	defer one.Close()
	connectAll(t, one, chain)
	fp, err := one.Footprint()
	if err != nil {
		t.Fatal(err)
	}
	var entries, bytes uint64
	for _, snap := range dumpAll(t, one) {
		for k, v := range snap {
			entries, bytes = entries+1, bytes+uint64(len(k)+len(v))/2 // hex
		}
	}
	if fp.Entries != entries || fp.LiveBytes != bytes || entries == 0 {
		t.Fatalf("Footprint has %d entries of %d bytes, the columns %d of %d", fp.Entries, fp.LiveBytes, entries, bytes)
	}
	if fp.CommittedBytes < bytes || fp.WrittenBytes < fp.CommittedBytes {
		t.Fatalf("committed %d bytes, written %d, for %d live bytes", fp.CommittedBytes, fp.WrittenBytes, bytes)
	}

	bulk := bulkIndexed(t, chain)
	defer bulk.Close()
	bfp, err := bulk.Footprint()
	if err != nil {
		t.Fatal(err)
	}
	if bfp.Digest != fp.Digest || bfp.LiveBytes != fp.LiveBytes {
		t.Fatalf("bulk: digest %s, %d bytes; block by block: %s, %d bytes", bfp.Digest, bfp.LiveBytes, fp.Digest, fp.LiveBytes)
	}
	// A bulk import's flushes are tables Pebble takes in, not batches.
	if bfp.CommittedBytes < bytes || bfp.WrittenBytes == 0 {
		t.Fatalf("bulk: committed %d bytes, written %d, for %d live bytes", bfp.CommittedBytes, bfp.WrittenBytes, bytes)
	}
	last := chain[len(chain)-1]
	if err := bulk.DisconnectBlock(last.Height, last.Hash); err != nil {
		t.Fatal(err)
	}
	if dfp, err := bulk.Footprint(); err != nil || dfp.Digest == fp.Digest {
		t.Fatalf("the digest did not change with the tip block's disconnection (%v)", err)
	}
}
