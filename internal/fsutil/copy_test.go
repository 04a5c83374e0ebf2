package fsutil

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CopyTree copies a tree's files and directories, byte for byte and not
// linked, leaves out what skip names (a directory whole), and keeps a file
// the target holds already, so a second call adds only what is new.
func TestCopyTree(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "copy")
	write := func(path, content string) {
		t.Helper()
		path = filepath.Join(src, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(path string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dst, path))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	write("a", "one")
	write("sub/b", "two")
	write("sub/c.tmp", "torn")
	write("skipped/d", "three")
	skip := func(rel string, _ fs.DirEntry) bool { return rel == "skipped" || strings.HasSuffix(rel, ".tmp") }
	if err := CopyTree(src, dst, skip); err != nil {
		t.Fatal(err)
	}
	if read("a") != "one" || read("sub/b") != "two" {
		t.Fatalf("copied a=%q sub/b=%q", read("a"), read("sub/b"))
	}
	for _, left := range []string{"sub/c.tmp", "skipped"} {
		if _, err := os.Stat(filepath.Join(dst, left)); err == nil {
			t.Errorf("%s was copied", left)
		}
	}
	// Appended to after the copy: the copy keeps the bytes it took.
	f, err := os.OpenFile(filepath.Join(src, "a"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(" more"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	write("sub/e", "new")
	if err := CopyTree(src, dst, skip); err != nil {
		t.Fatal(err)
	}
	if read("a") != "one" || read("sub/e") != "new" {
		t.Fatalf("a second copy: a=%q sub/e=%q", read("a"), read("sub/e"))
	}
}
