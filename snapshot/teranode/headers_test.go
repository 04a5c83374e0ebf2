package teranode

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"testing"

	"github.com/utxostore/utxostore/snapshot"
)

func hexBytes(s string) ([]byte, error) { return hex.DecodeString(s) }

// TestHeaders writes the headers of blocks 0 to 20 and reads them back;
// a header that does not hash to its block's hash, a gap, and a file
// ending before the block it names last are refused.
func TestHeaders(t *testing.T) {
	blocks := mainnetBlocks(t, 20)
	write := func(n int, change func(*BlockIndex)) []byte {
		var buf bytes.Buffer
		last := blocks[n-1]
		w, err := NewHeadersWriter(&buf, last.Hash, uint32(n-1))
		if err != nil {
			t.Fatal(err)
		}
		for h, b := range blocks[:n] {
			bi := &BlockIndex{Hash: b.Hash, Height: uint32(h), TxCount: uint64(len(b.Txs)), Header: b.Header}
			if change != nil {
				change(bi)
			}
			if err := w.Write(bi); err != nil {
				t.Fatal(err)
			}
		}
		return buf.Bytes()
	}
	read := func(file []byte) ([]*BlockIndex, error) {
		r, err := NewHeadersReader(bytes.NewReader(file))
		if err != nil {
			return nil, err
		}
		var got []*BlockIndex
		for {
			b, err := r.Next()
			if errors.Is(err, io.EOF) {
				return got, nil
			}
			if err != nil {
				return nil, err
			}
			got = append(got, b)
		}
	}
	file := write(21, nil)
	if len(file) != 8+32+4+21*(32+4+8+80) {
		t.Fatalf("%d bytes", len(file))
	}
	got, err := read(file)
	if err != nil || len(got) != 21 || got[20].Hash != blocks[20].Hash || got[0].TxCount != 1 {
		t.Fatalf("read %d blocks: %v", len(got), err)
	}
	if _, err := read(write(21, func(b *BlockIndex) {
		if b.Height == 7 {
			b.Header.Nonce++
		}
	})); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Errorf("a header that does not hash to its block: %v", err)
	}
	if _, err := read(write(21, func(b *BlockIndex) {
		if b.Height >= 7 {
			b.Height++
		}
	})); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Errorf("a gap in the heights: %v", err)
	}
	if _, err := read(file[:len(file)-124]); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Errorf("a file ending a block early: %v", err)
	}
	if _, err := read(file[:len(file)-5]); !errors.Is(err, snapshot.ErrTruncated) {
		t.Errorf("a file cut in a block: %v", err)
	}
}
