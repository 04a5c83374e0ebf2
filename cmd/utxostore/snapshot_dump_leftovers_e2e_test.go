package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/utxostore/utxostore/snapshot/teranode"
)

// TestSnapshotDumpRemovesWhatAKilledDumpLeft: a dump writes each file
// under a temporary name beside it and renames it into place once whole,
// so a dump killed with SIGKILL leaves only those temporary files; the
// next dump to the same files removes them, and leaves alone another
// target's. A Teranode dump killed between renaming its headers file and
// its set file leaves the headers alone, which the next dump at that block
// replaces. Dumps used to write straight to the final names: a killed
// Teranode dump left part-written files there, so the dump again at the
// same tip failed with "file exists" until someone removed them by hand.
//
// Nothing in a dump waits on anything a test can hold between its first
// write and its rename, so the leftovers are made here as a kill leaves
// them, with the same names and part of the same bytes.
func TestSnapshotDumpRemovesWhatAKilledDumpLeft(t *testing.T) {
	store := importedStore(t)
	whole := filepath.Join(t.TempDir(), "whole")
	ref := runSnapshotCmd(t, "dump", "--format", formatTeranode, "--data", store, whole)
	set, headers := ref.BaseHash+teranode.ExtSet, ref.BaseHash+teranode.ExtHeaders

	out := t.TempDir()
	partOf(t, filepath.Join(whole, set), filepath.Join(out, "."+set+".partial-123"))
	partOf(t, filepath.Join(whole, headers), filepath.Join(out, "."+headers+".partial-456"))
	for _, name := range []string{headers, headers + teranode.ExtSidecar} {
		copyFile(t, filepath.Join(whole, name), filepath.Join(out, name))
	}
	other := filepath.Join(out, "."+ref.BaseHash[:63]+"0"+teranode.ExtSet+".partial-789")
	notTemp := filepath.Join(out, "."+set+".partial-kept")
	for _, name := range []string{other, notTemp} {
		if err := os.WriteFile(name, []byte("another's"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := runSnapshotCmd(t, "dump", "--format", formatTeranode, "--data", store, out)
	if got.stats() != ref.stats() {
		t.Fatalf("the dump again: %s, the first: %s", got.stats(), ref.stats())
	}
	for _, name := range []string{set, headers, set + teranode.ExtSidecar, headers + teranode.ExtSidecar} {
		sameFiles(t, filepath.Join(whole, name), filepath.Join(out, name))
	}
	if left, _ := filepath.Glob(filepath.Join(out, "."+ref.BaseHash+"*.partial-[0-9]*")); len(left) > 0 {
		t.Errorf("after the dump again: %v", left)
	}
	for _, name := range []string{other, notTemp} {
		if _, err := os.Stat(name); err != nil {
			t.Errorf("another target's file: %v", err)
		}
	}

	dir := t.TempDir()
	dump, otherDump := filepath.Join(dir, "utxo.dat"), filepath.Join(dir, ".utxo2.dat.partial-5")
	runSnapshotCmd(t, "dump", "--format", formatCore, "--data", store, dump)
	if err := os.Rename(dump, filepath.Join(dir, ".utxo.dat.partial-42")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(otherDump, []byte("another's"), 0o644); err != nil {
		t.Fatal(err)
	}
	runSnapshotCmd(t, "dump", "--format", formatCore, "--data", store, dump)
	if left, _ := filepath.Glob(filepath.Join(dir, ".utxo.dat.partial-*")); len(left) > 0 {
		t.Errorf("after the Core dump again: %v", left)
	}
	if _, err := os.Stat(otherDump); err != nil {
		t.Errorf("another target's file: %v", err)
	}
}

// partOf writes the first half of the file src to dst, as a write killed
// midway leaves it.
func partOf(t *testing.T, src, dst string) {
	t.Helper()
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, raw[:len(raw)/2], 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyFile copies the file src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}
