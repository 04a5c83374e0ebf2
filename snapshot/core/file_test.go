package core

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/snapshot"
)

// TestVarInt checks Core's VARINT on numbers worked out by hand: each
// digit but the last is one less than its value, so 128 is 80 00 (the
// digit 1 written as 0) and 16512 is the first number of three digits.
func TestVarInt(t *testing.T) {
	for n, want := range map[uint64]string{
		0:                    "00",
		127:                  "7f",
		128:                  "8000",
		255:                  "807f",
		16511:                "ff7f",
		16512:                "808000",
		1<<32 - 1:            "8efefefe7f",
		^uint64(0):           "80fefefefefefefefe7f",
		1<<21 + 1<<14 + 1<<7: "80808000",
	} {
		got := appendVarInt(nil, n)
		if hex.EncodeToString(got) != want {
			t.Errorf("VARINT(%d) = %x, want %s", n, got, want)
		}
	}
}

// TestAmountCompression checks CompressAmount on amounts worked out by
// hand (1 + 10·(9·n + d - 1) + e, or 1 + 10·(n - 1) + 9 for e = 9) and that
// decompression inverts it.
func TestAmountCompression(t *testing.T) {
	for amount, want := range map[uint64]uint64{
		0:              0,
		1:              1,                        // n=0 d=1 e=0
		1_000_000:      7,                        // n=0 d=1 e=6
		100_000_000:    9,                        // n=0 d=1 e=8
		5_000_000_000:  50,                       // e=9, n=5
		123456789:      1 + 10*(12345678*9+9-1),  // e=0 d=9
		chain.MaxMoney: 1 + 10*(2_100_000-1) + 9, // e=9, n=2,100,000
	} {
		if got := compressAmount(amount); got != want {
			t.Errorf("CompressAmount(%d) = %d, want %d", amount, got, want)
		}
		if back, ok := decompressAmount(want); !ok || back != amount {
			t.Errorf("DecompressAmount(%d) = %d %v, want %d", want, back, ok, amount)
		}
	}
	if _, ok := decompressAmount(^uint64(0)); ok {
		t.Error("DecompressAmount(2^64-1) overflows, yet was accepted")
	}
}

// scripts returns one script of each kind the compression tells apart.
func scripts(t testing.TB) map[string][]byte {
	t.Helper()
	key, _ := btcec.PrivKeyFromBytes(bytes.Repeat([]byte{7}, 32))
	uncompressed := key.PubKey().SerializeUncompressed()
	notOnCurve := bytes.Clone(uncompressed)
	notOnCurve[64] ^= 1
	hash := bytes.Repeat([]byte{0x11}, 20)
	return map[string][]byte{
		"p2pkh":                   append(append([]byte{opDup, opHash160, 20}, hash...), opEqualVerify, opCheckSig),
		"p2sh":                    append(append([]byte{opHash160, 20}, hash...), opEqual),
		"p2pk compressed":         append(append([]byte{33}, key.PubKey().SerializeCompressed()...), opCheckSig),
		"p2pk uncompressed":       append(append([]byte{65}, uncompressed...), opCheckSig),
		"p2pk not on the curve":   append(append([]byte{65}, notOnCurve...), opCheckSig),
		"segwit v0":               append([]byte{0x00, 20}, hash...),
		"empty":                   {},
		"long":                    bytes.Repeat([]byte{0x51}, 400),
		"p2pkh with a wrong byte": append(append([]byte{opDup, opHash160, 20}, hash...), opEqual, opCheckSig),
	}
}

// TestScriptCompression: the special scripts compress to their type and
// payload, the rest (an uncompressed key off the curve included) are
// written whole, and every one comes back as it was.
func TestScriptCompression(t *testing.T) {
	special := map[string]byte{"p2pkh": 0, "p2sh": 1, "p2pk compressed": 2, "p2pk uncompressed": 4}
	for name, s := range scripts(t) {
		compressed, ok := compressScript(s)
		kind, wantSpecial := special[name]
		if ok != wantSpecial {
			t.Errorf("%s: compressed = %v, want %v", name, ok, wantSpecial)
			continue
		}
		if !ok {
			continue
		}
		got := compressed[0]
		if kind == scriptP2PKEven || kind == scriptP2PKUncomp {
			got &^= 1 // the parity of y
		}
		if got != kind || len(compressed) != 1+specialScriptSize(uint64(compressed[0])) {
			t.Errorf("%s: compressed to %x", name, compressed)
		}
		back, err := decompressScript(uint64(compressed[0]), compressed[1:])
		if err != nil || !bytes.Equal(back, s) {
			t.Errorf("%s: decompressed to %x (%v), want %x", name, back, err, s)
		}
	}
}

// testCoins returns coins of several transactions, ascending txid, with
// every script kind, big and small amounts, coinbases, and vouts on both
// sides of 16512, where Core's database order departs from numeric order.
func testCoins(t testing.TB) [][]coinstats.Coin {
	t.Helper()
	r := rand.New(rand.NewPCG(5, 6))
	var kinds [][]byte
	for _, s := range scripts(t) {
		kinds = append(kinds, s)
	}
	var txs [][]coinstats.Coin
	for i := range 30 {
		var txid chainhash.Hash
		txid[0] = byte(i * 8)
		txid[31] = byte(r.Uint32())
		var coins []coinstats.Coin
		for _, vout := range []uint32{uint32(i), 16000, 16511, 16512, 20000}[:1+i%5] {
			coins = append(coins, coinstats.Coin{Outpoint: coinstats.Outpoint{TxID: txid, Vout: vout},
				Height: uint32(r.IntN(900_000)), Coinbase: i%3 == 0, Value: r.Uint64N(chain.MaxMoney + 1),
				Script: kinds[r.IntN(len(kinds))]})
		}
		txs = append(txs, coins)
	}
	return txs
}

func writeTestFile(t testing.TB, txs [][]coinstats.Coin) []byte {
	t.Helper()
	var count uint64
	for _, tx := range txs {
		count += uint64(len(tx))
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Network: chain.MagicMainnet, BaseHash: chainhash.Hash{1, 2, 3}, Coins: count})
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

// TestRoundTrip: what the writer writes, the reader reads back, coin for
// coin.
func TestRoundTrip(t *testing.T) {
	txs := testCoins(t)
	file := writeTestFile(t, txs)
	r, err := NewReader(bytes.NewReader(file), "mainnet")
	if err != nil {
		t.Fatal(err)
	}
	if h := r.Header(); h.BaseHash != (chainhash.Hash{1, 2, 3}) || h.Network != chain.MagicMainnet {
		t.Fatalf("header %+v", h)
	}
	for i := 0; ; i++ {
		coins, err := r.Next()
		if errors.Is(err, io.EOF) {
			if i != len(txs) {
				t.Fatalf("%d transactions read, %d written", i, len(txs))
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(coins, txs[i], coinstats.Coin.Equal) {
			t.Fatalf("transaction %d:\n read %+v\nwrote %+v", i, coins, txs[i])
		}
	}
}

// TestDatabaseOrder: a transaction's coins go out in the order of Core's
// coins database, by the VARINT bytes of the vout (20000 is 80 9b 20,
// before 16000, fc 00), and come back in numeric order.
func TestDatabaseOrder(t *testing.T) {
	txid := chainhash.Hash{9}
	coin := func(vout uint32) coinstats.Coin {
		return coinstats.Coin{Outpoint: coinstats.Outpoint{TxID: txid, Vout: vout}, Height: 1, Value: 1, Script: []byte{0x51}}
	}
	file := writeTestFile(t, [][]coinstats.Coin{{coin(16000), coin(20000), coin(5)}})
	coinsAt := 5 + 2 + 4 + 32 + 8 + 32 + 1
	var vouts []uint64
	for rest := file[coinsAt:]; len(rest) > 0; {
		v, width, err := chain.DecodeCompactSize(rest)
		if err != nil {
			t.Fatal(err)
		}
		vouts = append(vouts, v)
		rest = rest[width+1+1+1+1:] // code, amount, script size 7, OP_TRUE
	}
	if !slices.Equal(vouts, []uint64{5, 20000, 16000}) {
		t.Fatalf("vouts written in the order %v, want Core's 5, 20000, 16000", vouts)
	}
	r, err := NewReader(bytes.NewReader(file), "mainnet")
	if err != nil {
		t.Fatal(err)
	}
	coins, err := r.Next()
	if err != nil || coins[0].Vout != 5 || coins[1].Vout != 16000 || coins[2].Vout != 20000 {
		t.Fatalf("read back %+v, %v", coins, err)
	}
}

// readAll reads every coin of file, returning the first error.
func readAll(file []byte, network string) error {
	r, err := NewReader(bytes.NewReader(file), network)
	if err != nil {
		return err
	}
	for {
		if _, err := r.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// TestRefusals: every prefix of a file is refused as truncated, and a
// file of another format, version or network, with a byte too many, or with
// a field no writer writes, is refused with what was found.
func TestRefusals(t *testing.T) {
	file := writeTestFile(t, testCoins(t)[:4])
	if err := readAll(file, "mainnet"); err != nil {
		t.Fatal(err)
	}
	for n := range len(file) {
		err := readAll(file[:n], "mainnet")
		var fe *snapshot.FileError
		if !errors.Is(err, snapshot.ErrTruncated) || !errors.As(err, &fe) {
			t.Fatalf("the first %d of %d bytes: %v, want a FileError wrapping ErrTruncated", n, len(file), err)
		}
	}
	change := func(at int, b ...byte) []byte {
		c := bytes.Clone(file)
		copy(c[at:], b)
		return c
	}
	var magicErr *snapshot.MagicError
	if err := readAll(change(0, 'U', 'T'), "mainnet"); !errors.As(err, &magicErr) || !bytes.Equal(magicErr.Found, []byte("UTxo\xff")) {
		t.Errorf("another magic: %v", err)
	}
	var versionErr *snapshot.VersionError
	if err := readAll(change(5, 1), "mainnet"); !errors.As(err, &versionErr) || versionErr.Found != "1" {
		t.Errorf("version 1: %v", err)
	}
	var networkErr *snapshot.NetworkError
	if err := readAll(file, "testnet3"); !errors.As(err, &networkErr) || networkErr.Found != "mainnet" || networkErr.Want != "testnet3" {
		t.Errorf("a mainnet file read for testnet3: %v", err)
	}
	if err := readAll(change(7, 0x1c, 0x16, 0x3f, 0x28), "mainnet"); !errors.As(err, &networkErr) || networkErr.Found != "an unknown network (magic 1c163f28)" {
		t.Errorf("an unknown network: %v", err)
	}
	if err := readAll(append(bytes.Clone(file), 0), "mainnet"); !errors.Is(err, snapshot.ErrTrailingData) {
		t.Errorf("a byte after the last coin: %v", err)
	}
	headerEnd := 5 + 2 + 4 + 32
	if err := readAll(change(headerEnd, 0xff), "mainnet"); !errors.Is(err, snapshot.ErrTruncated) {
		t.Errorf("a coin count beyond the file: %v", err)
	}
	firstCount := headerEnd + 8 + 32
	if err := readAll(change(firstCount, 0), "mainnet"); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Errorf("a transaction of no coins: %v", err)
	}
	if err := readAll(change(firstCount, 0xfc), "mainnet"); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Errorf("more coins in a transaction than the header counts: %v", err)
	}
}

// TestTransactionsOutOfOrderAreRefused: a transaction whose txid is not
// above the one before it, its coins split in two or after a higher
// txid, is refused where its txid starts, as the writer refuses to write
// it: Core's coins database holds each transaction once, in txid order.
func TestTransactionsOutOfOrderAreRefused(t *testing.T) {
	coin := func(txid byte, vout uint32) []coinstats.Coin {
		return []coinstats.Coin{{Outpoint: coinstats.Outpoint{TxID: chainhash.Hash{txid}, Vout: vout}, Height: 1, Value: 1, Script: []byte{0x51}}}
	}
	const headerLen = 5 + 2 + 4 + 32 + 8
	// join writes first and second as one file of two transactions, and
	// gives the offset of the second's txid.
	join := func(first, second []coinstats.Coin) ([]byte, int64) {
		file := writeTestFile(t, [][]coinstats.Coin{first})
		binary.LittleEndian.PutUint64(file[headerLen-8:], 2)
		return append(file, writeTestFile(t, [][]coinstats.Coin{second})[headerLen:]...), int64(len(file))
	}
	if file, _ := join(coin(1, 0), coin(2, 0)); readAll(file, "mainnet") != nil {
		t.Fatalf("two transactions in order: %v", readAll(file, "mainnet"))
	}
	for name, pair := range map[string][2][]coinstats.Coin{
		"a transaction's coins split in two": {coin(1, 0), coin(1, 1)},
		"a lower txid after a higher one":    {coin(2, 0), coin(1, 0)},
	} {
		file, second := join(pair[0], pair[1])
		err := readAll(file, "mainnet")
		var fe *snapshot.FileError
		if !errors.Is(err, snapshot.ErrCorrupt) || !errors.As(err, &fe) || fe.Offset != second {
			t.Errorf("%s: %v, want ErrCorrupt at offset %d", name, err, second)
		}
	}
}

// TestACoinCountCostsNoMemoryUntilItsCoinsAreRead: an 88-byte file whose
// first transaction claims 2^25 coins is refused as truncated at its first
// coin, having cost little memory. Next used to allocate every coin the
// count claims before reading one: 2.5 GB for this file.
func TestACoinCountCostsNoMemoryUntilItsCoinsAreRead(t *testing.T) {
	var b bytes.Buffer
	w, _ := NewWriter(&b, Header{Network: chain.MagicMainnet, Coins: ^uint64(0)})
	w.w.Flush()
	b.Write(make([]byte, 32)) // txid
	b.Write(chain.AppendCompactSize(nil, maxCompactSize))
	r, err := NewReader(&b, "mainnet")
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = r.Next()
	runtime.ReadMemStats(&after)
	if allocated := after.TotalAlloc - before.TotalAlloc; !errors.Is(err, snapshot.ErrTruncated) || allocated > 16<<20 {
		t.Fatalf("Next: %v, having allocated %d MB", err, allocated>>20)
	}
}

// TestCorruptCoin: a coin whose amount exceeds Core's MAX_MONEY, or whose
// compressed key is off the curve, is refused as corrupt.
func TestCorruptCoin(t *testing.T) {
	txid := chainhash.Hash{4}
	header := func() *bytes.Buffer {
		var b bytes.Buffer
		w, _ := NewWriter(&b, Header{Network: chain.MagicMainnet, Coins: 1})
		w.w.Flush()
		b.Write(txid[:])
		b.WriteByte(1) // one coin
		b.WriteByte(0) // vout 0
		b.WriteByte(2) // height 1, not a coinbase
		return &b
	}
	b := header()
	b.Write(appendVarInt(nil, compressAmount(chain.MaxMoney)+10)) // 21,000,001 BTC
	b.Write([]byte{specialScripts})                               // empty script
	if err := readAll(b.Bytes(), "mainnet"); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Errorf("an amount above MAX_MONEY: %v", err)
	}
	b = header()
	b.WriteByte(9)                          // 1 BTC
	b.WriteByte(scriptP2PKUncomp)           // uncompressed key, even y
	b.Write(bytes.Repeat([]byte{0xff}, 32)) // x above the field's prime
	if err := readAll(b.Bytes(), "mainnet"); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Errorf("a key off the curve: %v", err)
	}
}

// TestWriterRules: transactions out of txid order, and a count other than
// the header's, are refused.
func TestWriterRules(t *testing.T) {
	coin := func(b byte) []coinstats.Coin {
		return []coinstats.Coin{{Outpoint: coinstats.Outpoint{TxID: chainhash.Hash{b}}, Height: 1}}
	}
	w, _ := NewWriter(io.Discard, Header{Coins: 2})
	if err := w.WriteTx(coin(2)); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteTx(coin(1)); err == nil {
		t.Error("a lower txid after a higher one was written")
	}
	if err := w.Close(); err == nil {
		t.Error("Close with one coin of two")
	}
}
