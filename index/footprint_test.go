package index

import "testing"

// TestFootprintCountsTheColumns: Footprint's entries and live bytes are
// those of Blockbook's columns read straight from Pebble, and its
// Electrum bytes those of the Electrum columns; its digest is the same for
// the same blocks connected one by one or in bulk and changes with a
// block, which leaves the Electrum columns as they were; its write
// counters have counted the batches and the bulk import's tables.
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
	if electrum := columnBytes(t, one, cfScripts); fp.ElectrumBytes != electrum {
		t.Fatalf("Footprint has %d bytes of Electrum columns, the scripts column %d", fp.ElectrumBytes, electrum)
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
	if bfp.Digest != fp.Digest || bfp.LiveBytes != fp.LiveBytes || bfp.ElectrumBytes != fp.ElectrumBytes {
		t.Fatalf("bulk: digest %s, %d bytes, %d Electrum; block by block: %s, %d bytes, %d Electrum",
			bfp.Digest, bfp.LiveBytes, bfp.ElectrumBytes, fp.Digest, fp.LiveBytes, fp.ElectrumBytes)
	}
	// A bulk import's flushes are tables Pebble takes in, not batches.
	if bfp.CommittedBytes < bytes || bfp.WrittenBytes == 0 {
		t.Fatalf("bulk: committed %d bytes, written %d, for %d live bytes", bfp.CommittedBytes, bfp.WrittenBytes, bytes)
	}
	last := chain[len(chain)-1]
	if err := bulk.DisconnectBlock(last.Height, last.Hash); err != nil {
		t.Fatal(err)
	}
	dfp, err := bulk.Footprint()
	if err != nil || dfp.Digest == fp.Digest {
		t.Fatalf("the digest did not change with the tip block's disconnection (%v)", err)
	}
	if dfp.ElectrumBytes != fp.ElectrumBytes {
		t.Fatalf("the Electrum columns went from %d bytes to %d with the tip block's disconnection", fp.ElectrumBytes, dfp.ElectrumBytes)
	}

	// Both Electrum columns count: this chain pays a pay-to-pubkey script
	// and spends it.
	p2pkChain, _, _ := electrumChain()
	marked := openTest(t, t.TempDir(), Options{NoSync: true})
	defer marked.Close()
	connectAll(t, marked, p2pkChain)
	mfp, err := marked.Footprint()
	if err != nil {
		t.Fatal(err)
	}
	if electrum := columnBytes(t, marked, cfScripts) + columnBytes(t, marked, cfP2PK); mfp.ElectrumBytes != electrum {
		t.Fatalf("Footprint has %d bytes of Electrum columns, the columns %d", mfp.ElectrumBytes, electrum)
	}
}

// columnBytes is the size of column c's keys, without their prefix, and
// values; the column must hold entries.
func columnBytes(t *testing.T, ix *Index, c column) uint64 {
	t.Helper()
	var n uint64
	for k, v := range dump(t, ix, c) {
		n += uint64(len(k)+len(v)) / 2 // hex
	}
	if n == 0 {
		t.Fatalf("column %s is empty", c)
	}
	return n
}
