package fsutil_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/utxostore/utxostore/internal/fsutil"
)

func TestClaimDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := fsutil.ClaimDir(dir, "pebble"); err != nil {
		t.Fatalf("claiming a new directory: %v", err)
	}
	if err := fsutil.ClaimDir(dir, "pebble"); err != nil {
		t.Fatalf("reclaiming by the same engine: %v", err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, fsutil.MarkerFile))
	err := fsutil.ClaimDir(dir, "sozu")
	var wrong *fsutil.WrongEngineError
	if !errors.As(err, &wrong) || wrong.Found != "pebble" || wrong.Want != "sozu" {
		t.Fatalf("claiming another engine's directory: got %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, fsutil.MarkerFile))
	if string(before) != string(after) {
		t.Fatal("a refused claim changed the marker")
	}
}

func TestClaimDirRefusesForeignFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fsutil.ClaimDir(dir, "pebble"); err == nil {
		t.Fatal("claimed a directory full of unknown files")
	}
	if _, err := os.Stat(filepath.Join(dir, fsutil.MarkerFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refused claim left a marker behind")
	}
}

// A claim cut short by a crash (the marker written to its temporary name,
// not yet renamed) leaves nothing else in the directory: the next claim
// goes ahead rather than refusing the store's own file as a stranger's.
func TestClaimDirFinishesAnInterruptedClaim(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, fsutil.MarkerFile+".tmp"), []byte("sozu\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fsutil.ClaimDir(dir, "pebble"); err != nil {
		t.Fatalf("claiming after an interrupted claim: %v", err)
	}
	if err := fsutil.ClaimDir(dir, "sozu"); err == nil {
		t.Fatal("the directory was not claimed for pebble")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("the directory holds %d entries, want the marker alone", len(entries))
	}
}
