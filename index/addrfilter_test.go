package index

import (
	"encoding/binary"
	"testing"
)

// The filter holds every address added, tells most others apart, and
// reports full, rather than hold more, once its last filter has no room.
func TestAddressFilter(t *testing.T) {
	addr := func(n int) []byte { return []byte{0x76, 0xa9, 0x14, byte(n), byte(n >> 8)} }
	f := &addressFilter{first: 100, most: 3} // room for 100 + 200 + 400
	for n := range 700 {
		if !f.add(addr(n)) {
			t.Fatalf("the filter refused address %d of the 700 it has room for", n)
		}
	}
	if f.add(addr(700)) {
		t.Fatal("a full filter took one more address")
	}
	for n := range 700 {
		if !f.mayHold(addr(n)) {
			t.Fatalf("the filter denies address %d, which it holds", n)
		}
	}
	// 1% false positives in each of three filters: about 3% of others.
	falsePositives := 0
	for n := 1000; n < 11000; n++ {
		if f.mayHold(addr(n)) {
			falsePositives++
		}
	}
	if falsePositives > 500 {
		t.Fatalf("the filter may hold %d of 10,000 addresses never added", falsePositives)
	}
}

// BenchmarkAddressFilterMiss tests addresses never added against a stack
// of four filters, as a bulk import's filter is at ten million UTXOs
// (there the first filter is four times larger).
func BenchmarkAddressFilterMiss(b *testing.B) {
	addr := func(n uint64) []byte {
		a := []byte{0x76, 0xa9, 0x14, 21: 0x88, 0xac}
		binary.LittleEndian.PutUint64(a[3:], n*0x9e3779b97f4a7c15)
		return a
	}
	f := &addressFilter{first: 1 << 18, most: 4}
	for n := range uint64(15 << 18) { // the four filters' room
		if !f.add(addr(n)) {
			b.Fatalf("the filter refused address %d", n)
		}
	}
	probes := make([][]byte, 1<<14)
	for i := range probes {
		probes[i] = addr(uint64(i) + 1<<40)
	}
	b.ResetTimer()
	held := 0
	for i := 0; i < b.N; i++ {
		if f.mayHold(probes[i%len(probes)]) {
			held++
		}
	}
	b.ReportMetric(float64(held)/float64(b.N), "false-positives/op")
}
