package teranode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/snapshot"
	"github.com/utxostore/utxostore/utxo/record"
)

func isTruncated(err error) bool { return errors.Is(err, snapshot.ErrTruncated) }

func testTxs() [][]coinstats.Coin {
	var txs [][]coinstats.Coin
	for i := range 12 {
		txid := chainhash.Hash{byte(i), 0xaa}
		var coins []coinstats.Coin
		for vout := range uint32(1 + i%3) {
			coins = append(coins, coinstats.Coin{Outpoint: coinstats.Outpoint{TxID: txid, Vout: vout * 7},
				Height: uint32(100 + i), Coinbase: i%4 == 0, Value: uint64(i)*1e8 + uint64(vout),
				Script: bytes.Repeat([]byte{byte(vout)}, i*20)})
		}
		txs = append(txs, coins)
	}
	return txs
}

var testSetHeader = SetHeader{BlockHash: chainhash.Hash{1}, Height: 111, PrevHash: chainhash.Hash{2}}

func writeSet(t testing.TB, txs [][]coinstats.Coin) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewSetWriter(&buf, testSetHeader)
	if err != nil {
		t.Fatal(err)
	}
	for _, tx := range txs {
		if err := w.WriteTx(tx); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readSet(file []byte) ([][]coinstats.Coin, *SetReader, error) {
	r, err := NewSetReader(bytes.NewReader(file))
	if err != nil {
		return nil, nil, err
	}
	var txs [][]coinstats.Coin
	for {
		coins, err := r.Next()
		if errors.Is(err, io.EOF) {
			return txs, r, nil
		}
		if err != nil {
			return nil, nil, err
		}
		txs = append(txs, coins)
	}
}

// TestSetLayout: a set of one transaction of one output, worked out by
// hand: magic, block hash, height, previous hash, the wrapper, the footer.
func TestSetLayout(t *testing.T) {
	coin := coinstats.Coin{Outpoint: coinstats.Outpoint{TxID: chainhash.Hash{0xcc}, Vout: 3}, Height: 5, Coinbase: true, Value: 0x0102, Script: []byte{0x51, 0x52}}
	got := writeSet(t, [][]coinstats.Coin{{coin}})
	want := []byte("U-S-1.0 ")
	want = append(want, testSetHeader.BlockHash[:]...)
	want = append(want, 111, 0, 0, 0)
	want = append(want, testSetHeader.PrevHash[:]...)
	want = append(want, coin.TxID[:]...)
	want = append(want, 11, 0, 0, 0) // height 5 · 2 + coinbase
	want = append(want, 1, 0, 0, 0)  // one output
	want = append(want, 3, 0, 0, 0, 0x02, 0x01, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0x51, 0x52)
	want = append(want, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0) // footer
	if !bytes.Equal(got, want) {
		t.Fatalf("set file:\n got %x\nwant %x", got, want)
	}
}

// TestSetRoundTrip: what the writer writes the reader reads back, with the
// footer's counts.
func TestSetRoundTrip(t *testing.T) {
	txs := testTxs()
	back, r, err := readSet(writeSet(t, txs))
	if err != nil {
		t.Fatal(err)
	}
	if r.Header() != testSetHeader || len(back) != len(txs) {
		t.Fatalf("header %+v, %d transactions", r.Header(), len(back))
	}
	for i := range txs {
		for j := range txs[i] {
			a, b := back[i][j], txs[i][j]
			if !a.Equal(b) {
				t.Fatalf("transaction %d coin %d: %+v, wrote %+v", i, j, a, b)
			}
		}
	}
	if txCount, utxos := r.Counts(); txCount != 12 || utxos != 24 {
		t.Fatalf("counts %d %d", txCount, utxos)
	}
}

// TestSetRefusals: every prefix is refused (as truncated, or where the cut
// leaves 16 bytes at a transaction's start, as a footer that does not
// count what came before); another type, another version, an empty
// transaction or a footer miscounting are refused with what was found.
func TestSetRefusals(t *testing.T) {
	file := writeSet(t, testTxs()[:3])
	for n := range len(file) {
		_, _, err := readSet(file[:n])
		var fe *snapshot.FileError
		if !errors.As(err, &fe) || !(errors.Is(err, snapshot.ErrTruncated) || errors.Is(err, snapshot.ErrCorrupt)) {
			t.Fatalf("the first %d of %d bytes: %v", n, len(file), err)
		}
	}
	change := func(at int, b ...byte) []byte {
		c := bytes.Clone(file)
		copy(c[at:], b)
		return c
	}
	var magicErr *snapshot.MagicError
	if _, _, err := readSet(change(0, []byte("U-A-1.0 ")...)); !errors.As(err, &magicErr) || string(magicErr.Found) != "U-A-1.0 " {
		t.Errorf("an additions file: %v", err)
	}
	var versionErr *snapshot.VersionError
	if _, _, err := readSet(change(4, '2')); !errors.As(err, &versionErr) || versionErr.Found != "2.0" {
		t.Errorf("version 2.0: %v", err)
	}
	if _, _, err := readSet(change(7, 0)); err != nil {
		t.Errorf("the magic of Teranode's older builds, NUL for the last space: %v", err)
	}
	if _, _, err := readSet(change(len(file)-1, 9)); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Errorf("a footer counting other outputs: %v", err)
	}
	empty := writeSet(t, nil)
	withEmpty := append(bytes.Clone(empty[:len(empty)-16]), make([]byte, 40)...)
	withEmpty = append(withEmpty, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	if _, _, err := readSet(withEmpty); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Errorf("a transaction with no output: %v", err)
	}
}

// TestSetCoinsAStoreCannotHoldAreRefused: a coin at an output index above
// record.MaxWrapperIndex is refused where the file holds it, with the
// index found. The reader used to pass it on, and a load then either ran
// out of memory (vout 2^32-1) or made a store that reports the coin's
// record damaged (vout 2^26).
func TestSetCoinsAStoreCannotHoldAreRefused(t *testing.T) {
	for _, vout := range []uint32{record.MaxWrapperIndex + 1, ^uint32(0)} {
		coin := coinstats.Coin{Outpoint: coinstats.Outpoint{TxID: chainhash.Hash{0xcc}, Vout: vout}, Height: 5, Value: 1, Script: []byte{0x51}}
		_, _, err := readSet(writeSet(t, [][]coinstats.Coin{{coin}}))
		var fe *snapshot.FileError
		if !errors.As(err, &fe) || !errors.Is(err, snapshot.ErrCorrupt) || fe.Field != "transaction 0 output 0 index" || !strings.Contains(err.Error(), fmt.Sprint(vout)) {
			t.Errorf("a coin at vout %d: %v", vout, err)
		}
	}
}

// TestSetCoinsWorthMoreThanCanExistAreRefused: a coin worth more than
// MAX_MONEY is refused where the file holds it, as Core's reader refuses
// it, and one worth exactly MAX_MONEY is read. The reader used to pass on
// any value, even one above 2^63 that the store keeps as a negative
// amount.
func TestSetCoinsWorthMoreThanCanExistAreRefused(t *testing.T) {
	coin := coinstats.Coin{Outpoint: coinstats.Outpoint{TxID: chainhash.Hash{0xcc}}, Height: 5, Value: chain.MaxMoney, Script: []byte{0x51}}
	if _, _, err := readSet(writeSet(t, [][]coinstats.Coin{{coin}})); err != nil {
		t.Fatalf("a coin of MAX_MONEY: %v", err)
	}
	for _, value := range []uint64{chain.MaxMoney + 1, 1<<63 + 5} {
		coin.Value = value
		_, _, err := readSet(writeSet(t, [][]coinstats.Coin{{coin}}))
		var fe *snapshot.FileError
		if !errors.As(err, &fe) || !errors.Is(err, snapshot.ErrCorrupt) || fe.Field != "transaction 0 output 0 value" || !strings.Contains(err.Error(), fmt.Sprint(value)) {
			t.Errorf("a coin of %d satoshis: %v", value, err)
		}
	}
}

// TestFileSidecar: a File writes the sidecar Teranode's file store writes,
// and CheckSidecar finds a file that differs from it.
func TestFileSidecar(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "00ff.utxo-set")
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("abc"))
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	sidecar, _ := os.ReadFile(path + ".sha256")
	// SHA-256("abc"), FIPS 180-2's example.
	const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if string(sidecar) != abc+"  00ff.utxo-set\n" {
		t.Fatalf("sidecar %q", sidecar)
	}
	sum, _ := hexBytes(abc)
	if found, err := CheckSidecar(path, sum); !found || err != nil {
		t.Fatalf("CheckSidecar of the right sum: %v %v", found, err)
	}
	var checksum *snapshot.ChecksumError
	if _, err := CheckSidecar(path, make([]byte, 32)); !errors.As(err, &checksum) || checksum.Want != abc {
		t.Fatalf("CheckSidecar of another sum: %v", err)
	}
	if found, err := CheckSidecar(filepath.Join(dir, "none"), sum); found || err != nil {
		t.Fatalf("no sidecar: %v %v", found, err)
	}
	if _, err := Create(path); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("Create over a file: %v", err)
	}
}
