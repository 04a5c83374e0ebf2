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

// teranodeDiffs are the SHA-256 digests of Teranode's own additions and
// deletions files of Bitcoin blocks 169 and 170, committed in
// bsv-blockchain/teranode at fb3d000 as
// services/utxopersister/data/blockstore/<block hash>.utxo-{additions,deletions},
// brought to what fb3d000's code writes. Those files were written by an
// older build, whose magic ended in a NUL (fb3d000's ends in a space) and
// which ended each file with a 32-byte end marker and two counts; when the
// layout lost them, 47 of those 48 bytes were cut from the files, leaving
// one 0x00 after block 170's additions. The digests are of the files with
// the space, without that byte.
var teranodeDiffs = map[uint32][2]string{
	169: {"0b793cab3eb2bef42ce976262aec9913941221a195a65297501fa03248d9faf5", "3b0cafa9dbd0e6940d872c16bcf7c0fc1425e463b40618d2e669912d5a24a1f4"},
	170: {"81d3983eddb2b6677cc4e47b3482595f00f2a97120e6e02853eac6fa9929b769", "79b540e921f1d9bc4e9057b4edcd38ab77929cfb37a22e62331d2adab0214ae1"},
}

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
// and 170 are Teranode's, byte for byte; block 170's deletions, worked out
// by hand, are the header and the one outpoint its second transaction
// spends (output 0 of block 9's coinbase, 0437cd7f…).
func TestDiffsAsTeranodeWritesThem(t *testing.T) {
	blocks := mainnetBlocks(t, 170)
	for height, want := range teranodeDiffs {
		add, del := writeDiffs(t, blocks[height], height)
		if got := sha256.Sum256(add); hex.EncodeToString(got[:]) != want[0] {
			t.Errorf("block %d additions (%d bytes): SHA-256 %x, Teranode's %s", height, len(add), got, want[0])
		}
		if got := sha256.Sum256(del); hex.EncodeToString(got[:]) != want[1] {
			t.Errorf("block %d deletions (%d bytes): SHA-256 %x, Teranode's %s", height, len(del), got, want[1])
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
