package sozu

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestOpenLowersTheGoMemoryLimit: the memory budget becomes the Go
// runtime's soft memory limit, unless a lower one is set (GOMEMLIMIT).
func TestOpenLowersTheGoMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	o, err := ParseTuning("memory=1073741824")
	if err != nil {
		t.Fatal(err)
	}
	openFor(t, t.TempDir(), o).Close()
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Fatalf("memory limit %d after opening a store with a budget of 1 GiB", got)
	}

	debug.SetMemoryLimit(512 << 20)
	openFor(t, t.TempDir(), o).Close()
	if got := debug.SetMemoryLimit(-1); got != 512<<20 {
		t.Fatalf("memory limit %d: a lower limit (512 MiB) must stay", got)
	}
}
