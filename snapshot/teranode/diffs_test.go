package teranode

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/internal/testdata"
)

// mainnetBlocks returns Bitcoin's blocks 0 to last from the shared data.
func mainnetBlocks(t *testing.T, last uint32) []*chain.Block {
	t.Helper()
	f, err := chain.OpenBlockFile(testdata.Path(t, "btc-mainnet-0-14131.blk"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []*chain.Block
	for len(blocks) <= int(last) {
		r, err := f.Next()
		if err != nil {
			t.Fatal(err)
		}
		b := &chain.Block{BlockInfo: r.Info()}
		for r.Remaining() > 0 {
			tx, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			b.Txs = append(b.Txs, tx)
		}
		blocks = append(blocks, b)
	}
	return blocks
}

func writeDiffs(t *testing.T, b *chain.Block, height uint32) (additions, deletions []byte) {
	t.Helper()
	var add, del bytes.Buffer
	d, err := NewDiffWriter(&add, &del, b.Hash, height)
	if err != nil {
		t.Fatal(err)
	}
	for _, tx := range b.Txs {
		if err := d.AddTx(tx); err != nil {
			t.Fatal(err)
		}
	}
	return add.Bytes(), del.Bytes()
}

// TestDiffsAsTeranodeWritesThem: the additions and deletions of blocks 169
// and 170 are Teranode's, byte for byte (testdata.TeranodeDiffs); block
// 170's deletions, worked out
// by hand, are the header and the one outpoint its second transaction
// spends (output 0 of block 9's coinbase, 0437cd7f…).
func TestDiffsAsTeranodeWritesThem(t *testing.T) {
	blocks := mainnetBlocks(t, 170)
	for height, want := range testdata.TeranodeDiffs {
		add, del := writeDiffs(t, blocks[height], height)
		if got := sha256.Sum256(add); hex.EncodeToString(got[:]) != want.Additions {
			t.Errorf("block %d additions (%d bytes): SHA-256 %x, Teranode's %s", height, len(add), got, want.Additions)
		}
		if got := sha256.Sum256(del); hex.EncodeToString(got[:]) != want.Deletions {
			t.Errorf("block %d deletions (%d bytes): SHA-256 %x, Teranode's %s", height, len(del), got, want.Deletions)
		}
	}
	_, del := writeDiffs(t, blocks[170], 170)
	spent, _ := chainhash.NewHashFromStr("0437cd7f8525ceed2324359c2d0ba26006d92d856a9c20fa0241106ee5a597c9")
	hash170 := blocks[170].Hash
	want := append([]byte("U-D-1.0 "), hash170[:]...)
	want = append(want, 170, 0, 0, 0)
	want = append(want, spent[:]...)
	want = append(want, 0, 0, 0, 0)
	if !bytes.Equal(del, want) {
		t.Errorf("block 170 deletions:\n got %x\nwant %x", del, want)
	}
}

// TestDiffsReadBack: the readers give back what the writer wrote, every
// transaction of a block (none of a coinbase's inputs), and refuse the
// files cut short.
func TestDiffsReadBack(t *testing.T) {
	blocks := mainnetBlocks(t, 170)
	add, del := writeDiffs(t, blocks[170], 170)
	ar, err := NewAdditionsReader(bytes.NewReader(add))
	if err != nil {
		t.Fatal(err)
	}
	if h := ar.Header(); h.BlockHash != blocks[170].Hash || h.Height != 170 {
		t.Fatalf("additions header %+v", h)
	}
	for i, tx := range blocks[170].Txs {
		txid, coins, err := ar.Next()
		if err != nil || txid != tx.ID || len(coins) != len(tx.Msg.TxOut) {
			t.Fatalf("transaction %d: %s, %d coins, %v", i, txid, len(coins), err)
		}
		for vout, c := range coins {
			if c.Vout != uint32(vout) || c.Value != uint64(tx.Msg.TxOut[vout].Value) || c.Coinbase != (i == 0) || c.Height != 170 {
				t.Fatalf("transaction %d output %d read as %+v", i, vout, c)
			}
		}
	}
	if _, _, err := ar.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last: %v", err)
	}
	if got := sha256.Sum256(add); !bytes.Equal(ar.Sum(), got[:]) {
		t.Fatal("Sum is not the file's SHA-256")
	}
	dr, err := NewDeletionsReader(bytes.NewReader(del))
	if err != nil {
		t.Fatal(err)
	}
	if o, err := dr.Next(); err != nil || o.TxID != blocks[170].Txs[1].Msg.TxIn[0].PreviousOutPoint.Hash || o.Vout != 0 {
		t.Fatalf("deletion %v, %v", o, err)
	}
	if _, err := dr.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last deletion: %v", err)
	}
	for _, cut := range []int{3, 30, len(add) - 1} {
		r, err := NewAdditionsReader(bytes.NewReader(add[:cut]))
		for err == nil {
			_, _, err = r.Next()
		}
		if !isTruncated(err) {
			t.Errorf("additions cut at %d: %v", cut, err)
		}
	}
	r, err := NewDeletionsReader(bytes.NewReader(del[:len(del)-2]))
	for err == nil {
		_, err = r.Next()
	}
	if !isTruncated(err) {
		t.Errorf("deletions cut short: %v", err)
	}
}
