package fsutil

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MarkerFile names the file in a data directory that says which engine
// owns it. It is written when the directory is first claimed and checked on
// every later open, before the engine reads anything else.
const MarkerFile = "ENGINE"

// WrongEngineError reports a data directory that belongs to another engine.
type WrongEngineError struct {
	Dir   string
	Found string
	Want  string
}

func (e *WrongEngineError) Error() string {
	return fmt.Sprintf("data directory %s holds a %q store, not %q: open it with --engine %s, or choose another --data directory",
		e.Dir, e.Found, e.Want, e.Found)
}

// DirOwner returns the engine that claimed dir (its marker's name), or ""
// when dir holds no marker or does not exist. It reads and changes nothing
// else.
func DirOwner(dir string) (string, error) {
	marker := filepath.Join(dir, MarkerFile)
	found, err := os.ReadFile(marker)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading %s: %w", marker, err)
	}
	return strings.TrimSpace(string(found)), nil
}

// NotClaimedError reports a directory that no engine has claimed (or that
// does not exist) where an existing store was expected.
type NotClaimedError struct {
	Dir  string
	Want string
}

func (e *NotClaimedError) Error() string {
	return fmt.Sprintf("%s holds no %s store (no %s marker)", e.Dir, e.Want, MarkerFile)
}

// Claim is how an engine's Open claims its directory: ClaimDir, or for a
// read-only open, which must change nothing, CheckClaim.
func Claim(dir, name string, readOnly bool) error {
	if readOnly {
		return CheckClaim(dir, name)
	}
	return ClaimDir(dir, name)
}

// CheckClaim makes sure dir belongs to engine name, as ClaimDir does, for
// an engine that opens an existing store only: it reads and changes
// nothing. A directory claimed by another engine gives a
// *WrongEngineError, one claimed by none (or missing) a *NotClaimedError.
func CheckClaim(dir, name string) error {
	owner, err := DirOwner(dir)
	switch {
	case err != nil:
		return err
	case owner == "":
		return &NotClaimedError{Dir: dir, Want: name}
	case owner != name:
		return &WrongEngineError{Dir: dir, Found: owner, Want: name}
	}
	return nil
}

// ClaimDir makes sure dir exists and belongs to engine name. A new or empty
// directory is claimed for it; a directory claimed by another engine gives a
// *WrongEngineError and is left untouched; a non-empty directory with no
// marker is refused rather than mixed with unknown files.
func ClaimDir(dir, name string) error {
	owner, err := DirOwner(dir)
	switch {
	case err != nil:
		return err
	case owner == name:
		return nil
	case owner != "":
		return &WrongEngineError{Dir: dir, Found: owner, Want: name}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating data directory: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("reading data directory: %w", err)
	}
	// The marker's temporary file alone is a claim a crash cut short: the
	// write below starts it again.
	tmp := TempName(filepath.Join(dir, MarkerFile))
	entries = slices.DeleteFunc(entries, func(e os.DirEntry) bool { return e.Name() == filepath.Base(tmp) })
	if len(entries) > 0 {
		return fmt.Errorf("data directory %s is not empty and holds no utxostore marker (%s): refusing to mix a store with unknown files; choose an empty or new directory", dir, MarkerFile)
	}
	if err := WriteFileAtomic(filepath.Join(dir, MarkerFile), []byte(name+"\n")); err != nil {
		return fmt.Errorf("claiming data directory: %w", err)
	}
	return nil
}

// TempName is the temporary file WriteFileAtomic writes path's content to
// before renaming it into place; a crash can leave it behind.
func TempName(path string) string { return path + ".tmp" }

// WriteFileAtomic replaces path with data so that a crash leaves either
// the old file or the new one, whole: it writes TempName(path), fsyncs it,
// renames it over path and fsyncs the directory.
func WriteFileAtomic(path string, data []byte) error {
	tmp := TempName(path)
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := syncFile(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir fsyncs a directory so that file creations and renames in it are
// durable.
func SyncDir(dir string) error {
	return syncFile(dir)
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return nil
}
