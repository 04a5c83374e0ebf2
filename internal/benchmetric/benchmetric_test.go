package benchmetric

import "testing"

func TestRatios(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"write-amp", WriteAmp(300, 100), 3},
		{"write-amp of nothing logical", WriteAmp(300, 0), 0},
		{"disk/minimal", DiskPerMinimal(150, 100), 1.5},
		{"disk/minimal without a disk", DiskPerMinimal(0, 100), 0},
		{"disk/minimal of nothing live", DiskPerMinimal(150, 0), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	// A P2PKH output: 36-byte outpoint, 8-byte value, 25-byte script.
	if got := MinimalUTXOBytes(25); got != 69 {
		t.Errorf("MinimalUTXOBytes(25) = %d, want 69", got)
	}
}
