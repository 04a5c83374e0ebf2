package chain

import (
	"bytes"
	"io"
	"testing"

	"github.com/utxostore/utxostore/internal/testdata"
)

// BenchmarkParseBTCFile streams every block and transaction of the
// 14,132-block Bitcoin file from memory (so disk speed is not measured).
func BenchmarkParseBTCFile(b *testing.B) {
	raw := readFile(b, testdata.Path(b, "btc-mainnet-0-14131.blk"))
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		frames := NewFrameReader(bytes.NewReader(raw), MagicMainnet)
		for {
			br, err := frames.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			for {
				if _, err := br.Next(); err == io.EOF {
					break
				} else if err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}

// BenchmarkParseBSVBlock parses the largest real BSV block in memory.
func BenchmarkParseBSVBlock(b *testing.B) {
	raw := largestBSVBlock(b)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseBlock(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamBSVBlock reads the same block with BlockReader.
func BenchmarkStreamBSVBlock(b *testing.B) {
	raw := largestBSVBlock(b)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := readAllStreamed(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUTXOHash(b *testing.B) {
	script := make([]byte, 25)
	b.ReportAllocs()
	for b.Loop() {
		_ = UTXOHash([32]byte{1}, 3, script, 5_000_000_000)
	}
}

// largestBSVBlock is the largest of the raw BSV blocks.
func largestBSVBlock(b *testing.B) []byte {
	var raw []byte
	for _, p := range bsvBlockFiles(b) {
		if r := readFile(b, p); len(r) > len(raw) {
			raw = r
		}
	}
	return raw
}
