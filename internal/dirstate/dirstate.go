// Package dirstate captures a directory tree, so that a test can check that
// a refused or read-only command left it as it was.
package dirstate

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Of is every file and directory under dir, each with its mode and, for a
// file, its content's SHA-256 (modification times aside). A missing dir
// has none.
func Of(t testing.TB, dir string) map[string]string {
	t.Helper()
	state := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		entry := info.Mode().String()
		if d.Type().IsRegular() {
			content, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(content)
			entry += " " + hex.EncodeToString(sum[:])
		}
		state[path] = entry
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return state
}

// MustBeUnchanged fails the test for every path under dir that changed,
// vanished or appeared since before (from Of).
func MustBeUnchanged(t testing.TB, dir string, before map[string]string) {
	t.Helper()
	after := Of(t, dir)
	for path, was := range before {
		if after[path] != was {
			t.Errorf("%s changed: before %q, after %q", path, was, after[path])
		}
	}
	for path, is := range after {
		if _, ok := before[path]; !ok {
			t.Errorf("%s appeared: %q", path, is)
		}
	}
}
