package snapshot

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/utxostore/utxostore/coinstats"
)

func randomCoins(r *rand.Rand, n int) []coinstats.Coin {
	coins := make([]coinstats.Coin, n)
	for i := range coins {
		c := &coins[i]
		c.TxID[0], c.TxID[1] = byte(r.IntN(8)), byte(r.Uint32())
		c.Vout = uint32(r.IntN(100_000))
		c.Height, c.Coinbase, c.Value = uint32(r.IntN(1e6)), r.IntN(2) == 0, r.Uint64()
		c.Script = bytes.Repeat([]byte{byte(i)}, r.IntN(300))
	}
	slices.SortFunc(coins, func(a, b coinstats.Coin) int { return a.Compare(b.Outpoint) })
	return slices.CompactFunc(coins, func(a, b coinstats.Coin) bool { return a.Outpoint == b.Outpoint })
}

// TestSorterRuns sorts coins through several runs on disk (a bound of a
// few coins) and gets every coin back, whole and in order; Close removes
// the runs.
func TestSorterRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	want := randomCoins(r, 3000)
	shuffled := slices.Clone(want)
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	dir := t.TempDir()
	s := NewSorter(dir, 20_000)
	for i := range shuffled {
		if err := s.Add(&shuffled[i]); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.runs) < 5 {
		t.Fatalf("%d runs: the test means to merge several", len(s.runs))
	}
	var got []coinstats.Coin
	err := s.Each(func(c *coinstats.Coin) error {
		c2 := *c
		c2.Script = slices.Clone(c.Script)
		got = append(got, c2)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, want, coinstats.Coin.Equal) {
		t.Fatalf("%d coins back of %d, or not the same", len(got), len(want))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("runs left behind: %v", left)
	}
}

// TestSorterDuplicate: the same outpoint twice, in different runs, is
// refused with the outpoint.
func TestSorterDuplicate(t *testing.T) {
	coins := randomCoins(rand.New(rand.NewPCG(2, 2)), 100)
	s := NewSorter(t.TempDir(), 2000)
	defer s.Close()
	for i := range coins {
		s.Add(&coins[i])
	}
	s.Add(&coins[40])
	var dup *DuplicateError
	if err := s.Each(func(*coinstats.Coin) error { return nil }); !errors.As(err, &dup) || dup.Outpoint != coins[40].Outpoint {
		t.Fatalf("Each: %v, want the duplicate %s", err, coins[40].Outpoint)
	}
}
