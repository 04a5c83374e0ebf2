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
