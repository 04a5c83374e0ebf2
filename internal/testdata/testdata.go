// Package testdata finds the team's shared real-chain test data (see
// ../shared/data/README.md next to the module root) for tests in any
// package, and skips the test when it is absent, so that a clone of the
// module outside this workspace still passes.
package testdata

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

var (
	once    sync.Once
	dataDir string
	lookErr string
)

// locate walks up from the working directory (a test runs in its package
// directory) to the directory holding go.mod, then takes ../shared/data.
func locate() {
	dir, err := os.Getwd()
	if err != nil {
		lookErr = "cannot get working directory: " + err.Error()
		return
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			lookErr = "no go.mod above the working directory"
			return
		}
		dir = parent
	}
	candidate := filepath.Join(dir, "..", "shared", "data")
	if info, err := os.Stat(candidate); err != nil || !info.IsDir() {
		lookErr = "shared test data not found at " + candidate + " (it lives outside the module, next to its root)"
		return
	}
	dataDir = filepath.Clean(candidate)
}

// Find returns the shared data directory and whether it exists, for callers
// that can do without it (fuzz seeds), where skipping would be wrong.
func Find() (string, bool) {
	once.Do(locate)
	return dataDir, dataDir != ""
}

// Dir returns the shared data directory, or skips t when it is absent.
func Dir(t testing.TB) string {
	t.Helper()
	once.Do(locate)
	if dataDir == "" {
		t.Skip("skipping: " + lookErr)
	}
	return dataDir
}

// Path returns the path of name (slash-separated, relative to the data
// directory), or skips t when the directory or the file is absent.
func Path(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(Dir(t), filepath.FromSlash(name))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("skipping: shared test file %s not found: %v", name, err)
	}
	return p
}

// BSVBlocks returns the raw BSV mainnet blocks (bsv-mainnet/*.bin) keyed
// by file name, or skips t when the directory is absent.
func BSVBlocks(t testing.TB) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(Path(t, "bsv-mainnet"), "*.bin"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := make(map[string][]byte, len(paths))
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		blocks[filepath.Base(p)] = raw
	}
	return blocks
}
