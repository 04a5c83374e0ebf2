package setting

import (
	"testing"
	"time"
)

func TestDefault(t *testing.T) {
	for _, c := range []struct{ v, want time.Duration }{{0, 5}, {-1, 5}, {3, 3}} {
		v := c.v
		if Default(&v, 5); v != c.want {
			t.Errorf("Default(%d, 5) = %d, want %d", c.v, v, c.want)
		}
	}
	var n uint32
	if Default(&n, 7); n != 7 {
		t.Errorf("an unsigned zero became %d, want 7", n)
	}
}

// Strings, slices, functions and structs are unset at their zero value
// (an empty slice too), and kept otherwise.
func TestDefaultOfOtherKinds(t *testing.T) {
	s := ""
	if Default(&s, "mainnet"); s != "mainnet" {
		t.Errorf("an empty string became %q", s)
	}
	s = "testnet"
	if Default(&s, "mainnet"); s != "testnet" {
		t.Errorf("a set string became %q", s)
	}
	for _, v := range [][]int{nil, {}} {
		if Default(&v, []int{1, 2}); len(v) != 2 {
			t.Errorf("an empty slice became %v", v)
		}
	}
	kept := []int{3}
	if Default(&kept, []int{1, 2}); len(kept) != 1 || kept[0] != 3 {
		t.Errorf("a set slice became %v", kept)
	}
	var now func() int
	if Default(&now, func() int { return 1 }); now == nil || now() != 1 {
		t.Error("a nil function was not set")
	}
	if Default(&now, func() int { return 2 }); now() != 1 {
		t.Error("a set function was replaced")
	}
	type count struct{ min, max int }
	var c count
	if Default(&c, count{1, 9}); c != (count{1, 9}) {
		t.Errorf("a zero struct became %v", c)
	}
	c = count{0, 4}
	if Default(&c, count{1, 9}); c != (count{0, 4}) {
		t.Errorf("a set struct became %v", c)
	}
	f := -0.5
	if Default(&f, 0.9); f != 0.9 {
		t.Errorf("a negative float became %v", f)
	}
}
