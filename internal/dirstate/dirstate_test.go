package dirstate

import (
	"os"
	"path/filepath"
	"testing"
)

// A changed byte, a new file and a changed mode each differ from the
// state before; a missing directory has none.
func TestOfSeesEveryChange(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a")
	if err := os.WriteFile(file, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := Of(t, dir)
	for _, change := range []func() error{
		func() error { return os.WriteFile(file, []byte("two"), 0o644) },
		func() error { return os.Chmod(file, 0o600) },
		func() error { return os.WriteFile(filepath.Join(dir, "b"), nil, 0o644) },
	} {
		if err := change(); err != nil {
			t.Fatal(err)
		}
		after := Of(t, dir)
		if len(after) == len(before) && after[file] == before[file] {
			t.Fatalf("a change left the state as it was: %v", after)
		}
		before = after
	}
	if got := Of(t, filepath.Join(dir, "missing")); len(got) != 0 {
		t.Fatalf("a missing directory has state %v", got)
	}
}
