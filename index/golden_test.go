package index

import (
	"context"
	"strings"
	"testing"
)

// Scripts of the hand-built chain. Any bytes are an addrDesc; these are
// short so the expected values stay readable.
var (
	s1     = []byte{0x01, 0x01}
	s2     = []byte{0x02, 0x02}
	s3     = []byte{0x03, 0x03}
	opRet  = []byte{0x6a, 0x01, 0xff}
	coinIn = []Outpoint{{Coinbase: true}}
)

// goldenChain: block 0 pays a coinbase (tx a1) to s1 and s2; block 1 has a
// coinbase (c1) to s3 and tx d1, which spends a1:0 (s1) and pays s2
// twice, an OP_RETURN and change back to s1.
func goldenChain() []*Block {
	return []*Block{
		{Height: 0, Hash: hashOf(0xb0), Time: 0x495fab29, Size: 300, Txs: []Tx{
			{ID: hashOf(0xa1), Inputs: coinIn, Outputs: []Output{{s1, 5_000_000_000}, {s2, 1000}}},
		}},
		{Height: 1, Hash: hashOf(0xb1), Time: 0x4966bc61, Size: 127, Txs: []Tx{
			{ID: hashOf(0xc1), Inputs: coinIn, Outputs: []Output{{s3, 5_000_000_000}}},
			{ID: hashOf(0xd1), Inputs: []Outpoint{{TxID: hashOf(0xa1), Vout: 0}}, Outputs: []Output{
				{s2, 3000}, {opRet, 0}, {s2, 2000}, {s1, 4_999_995_000},
			}},
		}},
	}
}

// Expected bytes, derived by hand from the layouts of Blockbook's data
// format 5 (trezor/blockbook v0.3.4, docs/rocksdb.md).
//
//	5_000_000_000 = 0x012a05f200 -> bigInt 05 012a05f200
//	4_999_995_000 = 0x012a05de78 -> bigInt 05 012a05de78
//	1000 = 0x03e8, 3000 = 0x0bb8, 2000 = 0x07d0, 6000 = 0x1770
//	vlq: 300 -> 82 2c (0b10 0101100); 127 -> 7f
//	vint(x) = vuint(x<<1), negative: vuint(^(x<<1))
func goldenWant() map[column]snapshot {
	A, C, D := packedHex(0xa1), packedHex(0xc1), packedHex(0xd1)
	zero := strings.Repeat("00", 32)
	j := func(parts ...string) string { return strings.Join(parts, "") }
	return map[column]snapshot{
		cfHeight: {
			// height BE -> hash + time BE + vuint txs + vuint size
			"00000000": j(packedHex(0xb0), "495fab29", "01", "822c"),
			"00000001": j(packedHex(0xb1), "4966bc61", "02", "7f"),
		},
		cfAddresses: {
			// addrDesc + ^height -> txid + indexes (i<<1, |1 on the last) as vint
			"0101" + "ffffffff": j(A, "02"),       // s1: output 0 -> vint(1) = 02
			"0202" + "ffffffff": j(A, "06"),       // s2: output 1 -> vint(3) = 06
			"0101" + "fffffffe": j(D, "0c", "01"), // s1 in d1: output 3 -> vint(6) = 0c, input ^0 -> vint(-1) = 01
			"0202" + "fffffffe": j(D, "00", "0a"), // s2 in d1: outputs 0 -> 00, 2 (last) -> vint(5) = 0a
			"0303" + "fffffffe": j(C, "02"),       // s3: output 0
		},
		cfBlockTxs: {
			// height -> txid + vuint nr_inputs + (prev txid + vint vout); coinbase = zero txid, 0
			"00000000": j(A, "01", zero, "00"),
			"00000001": j(C, "01", zero, "00", D, "01", A, "00"),
		},
		cfTransactions: {},
		cfFiatRates:    {},
		cfAddressBalance: {
			// vuint txs + sent + balance + utxos (txid + vuint vout + vuint height + value)
			"0101": j("02", "05012a05f200", "05012a05de78", D, "03", "01", "05012a05de78"),
			"0202": j("02", "00", "021770", A, "01", "00", "0203e8", D, "00", "01", "020bb8", D, "02", "01", "0207d0"),
			"0303": j("01", "00", "05012a05f200", C, "00", "01", "05012a05f200"),
		},
		cfTxAddresses: {
			// vuint height + vuint n_in + (vuint len + addrDesc + value) + vuint n_out + (vint len or ^len if spent + addrDesc + value)
			A: j("00", "01", "00", "00", "02", "05", "0101", "05012a05f200", "04", "0202", "0203e8"), // output 0 spent: vint(^2) = 05
			C: j("01", "01", "00", "00", "01", "04", "0303", "05012a05f200"),
			D: j("01", "01", "02", "0101", "05012a05f200", "04",
				"04", "0202", "020bb8", "06", "6a01ff", "00", "04", "0202", "0207d0", "04", "0101", "05012a05de78"),
		},
	}
}

func TestGoldenBytes(t *testing.T) {
	ix := openTest(t, t.TempDir(), Options{})
	defer ix.Close()
	connectAll(t, ix, goldenChain())
	got, want := dumpAll(t, ix), goldenWant()
	if d := diffColumns(want, got); d != "" {
		t.Fatalf("column bytes differ:\n%s", d)
	}
}

func TestGoldenQueries(t *testing.T) {
	ix := openTest(t, t.TempDir(), Options{})
	defer ix.Close()
	connectAll(t, ix, goldenChain())
	bal, err := ix.Balance(s2)
	if err != nil {
		t.Fatal(err)
	}
	if bal.Txs != 2 || bal.Balance != 6000 || bal.Sent != 0 || bal.Received() != 6000 || len(bal.UTXOs) != 3 {
		t.Fatalf("s2 balance %+v", bal)
	}
	if u := bal.UTXOs[0]; u.TxID != hashOf(0xa1) || u.Vout != 1 || u.Height != 0 || u.Value != 1000 {
		t.Fatalf("oldest utxo %+v", u)
	}
	if bal, _ := ix.Balance(opRet); bal.Txs != 0 {
		t.Fatalf("OP_RETURN indexed: %+v", bal)
	}
	h, err := ix.History(context.Background(), s1, 1, 10, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if h.Total != 2 || h.TotalPages != 1 || len(h.Txs) != 2 || h.Txs[0].TxID != hashOf(0xd1) || h.Txs[0].Height != 1 ||
		len(h.Txs[0].Indexes) != 2 || h.Txs[0].Indexes[0] != 3 || h.Txs[0].Indexes[1] != ^int32(0) || h.Txs[1].TxID != hashOf(0xa1) {
		t.Fatalf("s1 history %+v", h)
	}
	h, _ = ix.History(context.Background(), s1, 2, 1, 0, 0)
	if h.Total != 2 || h.TotalPages != 2 || len(h.Txs) != 1 || h.Txs[0].TxID != hashOf(0xa1) {
		t.Fatalf("s1 page 2 %+v", h)
	}
	h, _ = ix.History(context.Background(), s1, 1, 10, 1, 1)
	if h.Total != 1 || h.Txs[0].TxID != hashOf(0xd1) {
		t.Fatalf("s1 height 1 only %+v", h)
	}
	bi, ok, err := ix.BestBlock()
	if err != nil || !ok || bi.Height != 1 || bi.Hash != hashOf(0xb1) || bi.Txs != 2 || bi.Size != 127 {
		t.Fatalf("best block %+v %v %v", bi, ok, err)
	}
	ta, ok, err := ix.TxAddresses(hashOf(0xa1))
	if err != nil || !ok || !ta.Outputs[0].Spent || ta.Outputs[1].Spent || len(ta.Inputs) != 1 || len(ta.Inputs[0].AddrDesc) != 0 {
		t.Fatalf("txAddresses a1 %+v %v %v", ta, ok, err)
	}
}
