package testdata

import (
	"os"
	"testing"
)

func TestDirFindsSharedData(t *testing.T) {
	dir := Dir(t)
	if _, err := os.Stat(Path(t, "README.md")); err != nil {
		t.Fatalf("README.md in %s: %v", dir, err)
	}
}
