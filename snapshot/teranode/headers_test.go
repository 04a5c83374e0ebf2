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
		r, err := NewHeadersReader(bytes.NewReader(file), "mainnet")
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

// TestHeadersOfAnotherNetworkAreRefused: a headers file is read for a
// network, and a first block other than that network's genesis block is
// refused where the file holds it, with the network found: mainnet's
// headers read for testnet3, and a file that starts above the genesis
// block. The reader used to take any chain, so a Teranode snapshot of
// mainnet loaded into a testnet3 store.
func TestHeadersOfAnotherNetworkAreRefused(t *testing.T) {
	blocks := mainnetBlocks(t, 3)
	file := func(from int) []byte {
		var buf bytes.Buffer
		w, err := NewHeadersWriter(&buf, blocks[3].Hash, 3)
		for h := from; err == nil && h <= 3; h++ {
			err = w.Write(&BlockIndex{Hash: blocks[h].Hash, Height: uint32(h), TxCount: 1, Header: blocks[h].Header})
		}
		if err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	first := func(file []byte, network string) error {
		r, err := NewHeadersReader(bytes.NewReader(file), network)
		if err != nil {
			return err
		}
		_, err = r.Next()
		return err
	}
	if err := first(file(0), "mainnet"); err != nil {
		t.Fatalf("mainnet's headers read for mainnet: %v", err)
	}
	var fe *snapshot.FileError
	var ne *snapshot.NetworkError
	err := first(file(0), "testnet3")
	if !errors.As(err, &fe) || fe.Offset != 8+32+4 || !errors.As(err, &ne) || ne.Found != "mainnet" || ne.Want != "testnet3" {
		t.Errorf("mainnet's headers read for testnet3: %v", err)
	}
	err = first(file(1), "mainnet")
	if !errors.As(err, &ne) || ne.Found != "an unknown network (its first block is "+blocks[1].Hash.String()+" at height 1)" {
		t.Errorf("headers from block 1: %v", err)
	}
	if _, err := NewHeadersReader(bytes.NewReader(file(0)), "nonet"); err == nil {
		t.Error("a reader for an unknown network")
	}
}
