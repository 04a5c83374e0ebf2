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

func TestBSVBlocksReadsTheFourBlocks(t *testing.T) {
	blocks := BSVBlocks(t)
	if len(blocks) != 4 {
		t.Fatalf("read %d BSV blocks, the README names four", len(blocks))
	}
	for name, raw := range blocks {
		if len(raw) < 80 {
			t.Errorf("%s: %d bytes, shorter than a block header", name, len(raw))
		}
	}
}
