package fsutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// PartialPrefix starts the name of the temporary file, beside path, that
// CreatePartial writes path's content to; os.CreateTemp ends it with
// digits. A process killed before PlacePartial leaves it behind.
func PartialPrefix(path string) string { return "." + filepath.Base(path) + ".partial-" }

// CreatePartial creates a new file beside path under a temporary name
// (PartialPrefix), mode 0644, for PlacePartial to rename to path once it
// is whole: path only ever holds a whole file, so a write that is killed
// leaves nothing under path to refuse or mistake for the file.
func CreatePartial(path string) (*os.File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), PartialPrefix(path)+"*")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(0o644); err != nil { // CreateTemp's is 0600
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// PlacePartial fsyncs and closes f, made by CreatePartial, renames it to
// path and fsyncs the directory, so that a crash leaves either no file at
// path or the whole one.
func PlacePartial(f *os.File, path string) error {
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("fsync %s: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// RemoveTemps removes the entries of dir named prefix followed by digits
// alone, as os.CreateTemp and os.MkdirTemp name them: the temporary files
// or directories of a target that a process killed or crashed before its
// end left behind. Other names, another target's among them, are left
// alone.
func RemoveTemps(dir, prefix string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		suffix, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || suffix == "" || strings.Trim(suffix, "0123456789") != "" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
