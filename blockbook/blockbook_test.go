package blockbook

import (
	"math"
	"strconv"
	"testing"
)

// Blockbook's computePaging: 1-based pages, a page past the end (or a huge
// or negative one) is the last page, and an empty list is one empty page.
func TestComputePaging(t *testing.T) {
	for _, c := range []struct {
		count, page, size int
		want              paging
		from, to          int
	}{
		{0, 0, 1000, paging{1, 1, 1000}, 0, 0},
		{5, 0, 2, paging{1, 3, 2}, 0, 2},
		{5, 2, 2, paging{3, 3, 2}, 4, 5},
		{5, 3, 2, paging{3, 3, 2}, 4, 5},
		{5, -1, 2, paging{3, 3, 2}, 4, 5},
		{5, 1 << 62, 2, paging{3, 3, 2}, 4, 5},
		{1000, 0, 1000, paging{1, 1, 1000}, 0, 1000},
		{1001, 1, 1000, paging{2, 2, 1000}, 1000, 1001},
	} {
		pg, from, to := computePaging(c.count, c.page, c.size)
		if pg != c.want || from != c.from || to != c.to {
			t.Errorf("computePaging(%d, %d, %d) = %+v [%d, %d), want %+v [%d, %d)", c.count, c.page, c.size, pg, from, to, c.want, c.from, c.to)
		}
	}
}

// The difficulty is bitcoind's: the limit over the target, as a decimal
// with up to 16 significant digits; "1" for the minimum.
func TestDifficulty(t *testing.T) {
	if got := difficulty(0x1d00ffff); got != "1" {
		t.Errorf("difficulty(1d00ffff) = %s, want 1", got)
	}
	for bits, want := range map[uint32]float64{
		0x1b04864c: 14484.1623612254,  // block 100000, as block explorers show it
		0x1a05db8b: 2864140.507810974, // block 200000
	} {
		got, err := strconv.ParseFloat(difficulty(bits), 64)
		if err != nil || math.Abs(got-want)/want > 1e-12 {
			t.Errorf("difficulty(%08x) = %s, want %v", bits, difficulty(bits), want)
		}
	}
}

// Blockbook shows an OP_RETURN's data as text in parentheses when it is
// printable, else in hex, and nothing for other scripts.
func TestOpReturnText(t *testing.T) {
	for script, want := range map[string]string{
		"\x6a\x05hello":    "OP_RETURN (hello)",
		"\x6a\x02\x00\xff": "OP_RETURN 00ff",
		"\x6a\x4c\x03abc":  "OP_RETURN (abc)",
		"\x6a\x05hi":       "",
		"\x76\xa9":         "",
	} {
		if got := opReturnText([]byte(script)); got != want {
			t.Errorf("opReturnText(%x) = %q, want %q", script, got, want)
		}
	}
}
