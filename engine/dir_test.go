package engine_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/utxostore/utxostore/engine"
)

func TestClaimDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := engine.ClaimDir(dir, "pebble"); err != nil {
		t.Fatalf("claiming a new directory: %v", err)
	}
	if err := engine.ClaimDir(dir, "pebble"); err != nil {
		t.Fatalf("reclaiming by the same engine: %v", err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, engine.MarkerFile))
	err := engine.ClaimDir(dir, "sozu")
	var wrong *engine.WrongEngineError
	if !errors.As(err, &wrong) || wrong.Found != "pebble" || wrong.Want != "sozu" {
		t.Fatalf("claiming another engine's directory: got %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, engine.MarkerFile))
	if string(before) != string(after) {
		t.Fatal("a refused claim changed the marker")
	}
}

func TestClaimDirRefusesForeignFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := engine.ClaimDir(dir, "pebble"); err == nil {
		t.Fatal("claimed a directory full of unknown files")
	}
	if _, err := os.Stat(filepath.Join(dir, engine.MarkerFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refused claim left a marker behind")
	}
}
