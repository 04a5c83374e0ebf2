package coinstats

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// randomCoins returns n coins of every kind the rules tell apart: common
// scripts, scripts whose CompactSize length takes 3 bytes, unspendable ones
// (OP_RETURN, longer than MaxScriptSize), coinbases, and outputs of the
// genesis block (height 0); several share a txid.
func randomCoins(r *rand.Rand, n int) []Coin {
	coins := make([]Coin, 0, n)
	for len(coins) < n {
		var c Coin
		for i := range c.TxID {
			c.TxID[i] = byte(r.Uint32())
		}
		for range 1 + r.IntN(3) {
			c.Vout = uint32(r.IntN(70000))
			c.Height = uint32(r.IntN(900000))
			c.Coinbase = r.IntN(5) == 0
			c.Value = r.Uint64N(21e14)
			size := r.IntN(40)
			switch r.IntN(12) {
			case 0:
				size = 300 + r.IntN(700)
			case 1:
				size = MaxScriptSize + 1
			case 2:
				c.Height = 0
			}
			c.Script = make([]byte, size)
			for i := range c.Script {
				c.Script[i] = byte(r.Uint32())
			}
			if r.IntN(10) == 0 && size > 0 {
				c.Script[0] = 0x6a // OP_RETURN
			}
			coins = append(coins, c)
		}
	}
	return coins
}

// TestStatsMatchIndependentImplementation checks txouts, total_amount,
// muhash and hash_serialized_3 against testdata/coinstats.py, which
// computes them with its own serialization, its own ChaCha20, Python's
// big integers and hashlib, on random coins added and removed.
func TestStatsMatchIndependentImplementation(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("skipping: python3 is not installed; the independent implementation is a Python script")
	}
	r := rand.New(rand.NewPCG(7, 11))
	coins := randomCoins(r, 400)
	removed := map[int]bool{}
	for i := range coins {
		if r.IntN(4) == 0 {
			removed[i] = true
		}
	}
	var input strings.Builder
	var stats Stats
	line := func(op string, c *Coin) {
		fmt.Fprintf(&input, "%s %x %d %d %d %d s%x\n", op, c.TxID[:], c.Vout, c.Height, b2i(c.Coinbase), c.Value, c.Script)
	}
	for i := range coins {
		line("add", &coins[i])
		stats.Add(&coins[i])
	}
	for i := range coins {
		if removed[i] {
			line("remove", &coins[i])
			stats.Remove(&coins[i])
		}
	}
	var remaining []Coin
	for i, c := range coins {
		if !removed[i] {
			remaining = append(remaining, c)
		}
	}
	slices.SortFunc(remaining, func(a, b Coin) int { return a.Compare(b.Outpoint) })
	remaining = slices.CompactFunc(remaining, func(a, b Coin) bool { return a.Outpoint == b.Outpoint })
	var walk Walk
	for i := range remaining {
		if err := walk.Add(&remaining[i]); err != nil {
			t.Fatal(err)
		}
	}

	cmd := exec.Command(python, "testdata/coinstats.py")
	cmd.Stdin = strings.NewReader(input.String())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("coinstats.py: %v\n%s", err, stderr.String())
	}
	var want Summary
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("coinstats.py printed %q: %v", out, err)
	}
	got := stats.Finalize()
	walked := walk.Finalize()
	if got.TxOuts != want.TxOuts || got.TotalAmount != want.TotalAmount || got.MuHash != want.MuHash {
		t.Errorf("Stats: %+v\nPython: %+v", got, want)
	}
	if walked.TxOuts != want.TxOuts || walked.TotalAmount != want.TotalAmount ||
		walked.MuHash != want.MuHash || walked.HashSerialized3 != want.HashSerialized3 {
		t.Errorf("Walk: %+v\nPython: %+v", walked, want)
	}
	if got.TxOuts == 0 || got.TxOuts == uint64(len(coins)) {
		t.Fatalf("%d of %d coins counted: the rule was not exercised", got.TxOuts, len(coins))
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestTxOutSer checks the serialization of one coin byte by byte, Core's
// layout worked out by hand: txid, LE vout, LE height*2+coinbase, LE value,
// CompactSize length (three bytes past 252), script.
func TestTxOutSer(t *testing.T) {
	c := Coin{Outpoint: Outpoint{Vout: 0x01020304}, Height: 0x10, Coinbase: true, Value: 0x0102030405060708,
		Script: bytes.Repeat([]byte{0xab}, 300)}
	c.TxID[0], c.TxID[31] = 0xaa, 0xbb
	got := c.AppendTxOutSer(nil)
	want := "aa" + strings.Repeat("00", 30) + "bb" + "04030201" + "21000000" + "0807060504030201" + "fd2c01" + strings.Repeat("ab", 300)
	if hex.EncodeToString(got) != want {
		t.Fatalf("TxOutSer:\n got %x\nwant %s", got, want)
	}
}

// TestInSet is Core's rule: OP_RETURN first or too long is out, and so is
// the genesis block's coinbase (height 0).
func TestInSet(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Coin
		want bool
	}{
		{"p2pkh", Coin{Height: 1, Script: []byte{0x76, 0xa9}}, true},
		{"empty script", Coin{Height: 1}, true},
		{"OP_RETURN", Coin{Height: 1, Value: 5, Script: []byte{0x6a, 0x01}}, false},
		{"OP_FALSE OP_RETURN", Coin{Height: 1, Script: []byte{0x00, 0x6a}}, true},
		{"longest spendable", Coin{Height: 1, Script: make([]byte, MaxScriptSize)}, true},
		{"too long", Coin{Height: 1, Script: make([]byte, MaxScriptSize+1)}, false},
		{"genesis", Coin{Height: 0, Coinbase: true, Script: []byte{0x41}}, false},
	} {
		if got := tc.c.InSet(); got != tc.want {
			t.Errorf("%s: InSet = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestStatsBinaryAndCombine: a block's changes gathered apart and combined
// give the set built in place, and the state survives MarshalBinary.
func TestStatsBinaryAndCombine(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	coins := randomCoins(r, 60)
	var inPlace, base, block Stats
	for i := range coins[:40] {
		inPlace.Add(&coins[i])
		base.Add(&coins[i])
	}
	for i := range coins[40:] {
		inPlace.Add(&coins[40+i])
		block.Add(&coins[40+i])
	}
	for i := range coins[:10] {
		inPlace.Remove(&coins[i])
		block.Remove(&coins[i])
	}
	raw, err := base.MarshalBinary()
	if err != nil || len(raw) != StatsSize {
		t.Fatalf("MarshalBinary: %d bytes, %v", len(raw), err)
	}
	var restored Stats
	if err := restored.UnmarshalBinary(raw); err != nil {
		t.Fatal(err)
	}
	restored.Combine(&block)
	if got, want := restored.Finalize(), inPlace.Finalize(); got != want {
		t.Fatalf("combined %+v, in place %+v", got, want)
	}
	raw[0] = 9
	if err := restored.UnmarshalBinary(raw); !errors.Is(err, ErrStatsState) {
		t.Fatalf("another version: %v", err)
	}
	if err := restored.UnmarshalBinary(raw[:20]); !errors.Is(err, ErrStatsState) {
		t.Fatalf("short: %v", err)
	}
}

// TestStatsSubtractUndoesCombine: a block's changes combined into a set
// and subtracted again leave the set as it was, as a disconnected block
// must.
func TestStatsSubtractUndoesCombine(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	coins := randomCoins(r, 50)
	var set, block Stats
	for i := range coins[:30] {
		set.Add(&coins[i])
	}
	want := set
	for i := range coins[30:] {
		block.Add(&coins[30+i])
	}
	for i := range coins[:12] {
		block.Remove(&coins[i])
	}
	set.Combine(&block)
	if set.Finalize() == want.Finalize() {
		t.Fatal("the block's changes changed nothing")
	}
	set.Subtract(&block)
	if got := set.Finalize(); got != want.Finalize() {
		t.Fatalf("after Combine and Subtract: %+v, want the set before, %+v", got, want.Finalize())
	}
}

// TestWalkOrder: a coin out of outpoint order, or twice, is refused with
// what was found.
func TestWalkOrder(t *testing.T) {
	var w Walk
	a := Coin{Outpoint: Outpoint{Vout: 5}, Height: 1}
	b := Coin{Outpoint: Outpoint{Vout: 4}, Height: 1}
	b.TxID[0] = 1
	if err := w.Add(&a); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(&b); err != nil {
		t.Fatalf("a later txid with a lower vout: %v", err)
	}
	var order *OrderError
	if err := w.Add(&a); !errors.As(err, &order) || order.Coin != a.Outpoint || order.Previous != b.Outpoint {
		t.Fatalf("going back: %v", err)
	}
	if err := w.Add(&b); !errors.As(err, &order) {
		t.Fatalf("the same coin twice: %v", err)
	}
}

// BenchmarkStatsAdd is the cost of counting one coin: its serialization,
// its MuHash element and one multiplication.
func BenchmarkStatsAdd(b *testing.B) {
	c := Coin{Outpoint: Outpoint{Vout: 1}, Height: 500000, Value: 1e8, Script: bytes.Repeat([]byte{0x51}, 25)}
	var s Stats
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.TxID[0], c.TxID[1] = byte(i), byte(i>>8)
		s.Add(&c)
	}
}
