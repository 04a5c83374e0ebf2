package blob_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/blob"
)

var ctx = context.Background()

func newStore(t *testing.T) (*blob.FileStore, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := blob.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

func TestPutGetIsWriteIfAbsent(t *testing.T) {
	s, _ := newStore(t)
	txid := chainhash.Hash{1}
	if _, err := s.Get(ctx, txid, blob.FileTypeTx); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("get before put: %v", err)
	}
	if err := s.Put(ctx, txid, blob.FileTypeTx, []byte("first")); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, txid, blob.FileTypeTx, []byte("second")); !errors.Is(err, blob.ErrExists) {
		t.Fatalf("second put: %v, want ErrExists", err)
	}
	if got, err := s.Get(ctx, txid, blob.FileTypeTx); err != nil || string(got) != "first" {
		t.Fatalf("get: %q %v", got, err)
	}
	// The two file types are separate blobs.
	if _, err := s.Get(ctx, txid, blob.FileTypeOutputs); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("outputs blob: %v", err)
	}
}

func TestConcurrentPutsLeaveOneCompleteBlob(t *testing.T) {
	s, dir := newStore(t)
	txid := chainhash.Hash{2}
	payloads := [][]byte{bytes.Repeat([]byte("a"), 1<<20), bytes.Repeat([]byte("b"), 1<<20)}
	var wg sync.WaitGroup
	errs := make([]error, len(payloads))
	for i, p := range payloads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Put(ctx, txid, blob.FileTypeTx, p)
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, blob.ErrExists):
			t.Fatal(err)
		}
	}
	if won != 1 {
		t.Fatalf("%d puts succeeded, want exactly one", won)
	}
	got, _ := s.Get(ctx, txid, blob.FileTypeTx)
	if !bytes.Equal(got, payloads[0]) && !bytes.Equal(got, payloads[1]) {
		t.Fatal("the stored blob is a mix of two writes")
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, "*", ".tmp-*"))
	if len(leftovers) != 0 {
		t.Fatalf("temporary files left: %v", leftovers)
	}
}

func TestDeleteAtHeightAndPrune(t *testing.T) {
	s, _ := newStore(t)
	early, late, kept := chainhash.Hash{3}, chainhash.Hash{4}, chainhash.Hash{5}
	for _, id := range []chainhash.Hash{early, late, kept} {
		if err := s.Put(ctx, id, blob.FileTypeTx, id[:]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetDAH(ctx, early, blob.FileTypeTx, 10); err != nil {
		t.Fatal(err)
	}
	if err := s.SetDAH(ctx, late, blob.FileTypeTx, 20); err != nil {
		t.Fatal(err)
	}
	if err := s.SetDAH(ctx, chainhash.Hash{9}, blob.FileTypeTx, 20); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("DAH on a missing blob: %v", err)
	}
	if n, err := s.Prune(ctx, 9); err != nil || n != 0 {
		t.Fatalf("prune at 9: %d %v", n, err)
	}
	if n, err := s.Prune(ctx, 15); err != nil || n != 1 {
		t.Fatalf("prune at 15: %d %v", n, err)
	}
	if _, err := s.Get(ctx, early, blob.FileTypeTx); !errors.Is(err, blob.ErrNotFound) {
		t.Fatal("the blob due at 10 survived")
	}
	// Cancelling the DAH keeps the blob.
	if err := s.SetDAH(ctx, late, blob.FileTypeTx, 0); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Prune(ctx, 100); n != 0 {
		t.Fatal("a blob whose DAH was cancelled was pruned")
	}
	for _, id := range []chainhash.Hash{late, kept} {
		if _, err := s.Get(ctx, id, blob.FileTypeTx); err != nil {
			t.Fatalf("blob %x: %v", id[:1], err)
		}
	}
}

func TestDamagedDAHFileIsReported(t *testing.T) {
	s, dir := newStore(t)
	id := chainhash.Hash{6}
	if err := s.Put(ctx, id, blob.FileTypeTx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := s.SetDAH(ctx, id, blob.FileTypeTx, 5); err != nil {
		t.Fatal(err)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*", "*.dah"))
	if len(matches) != 1 {
		t.Fatalf("dah files: %v", matches)
	}
	if err := os.WriteFile(matches[0], []byte("junk!"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prune(ctx, 10); err == nil {
		t.Fatal("a damaged delete-at-height file was silently accepted")
	}
	if _, err := s.Get(ctx, id, blob.FileTypeTx); err != nil {
		t.Fatal("a damaged DAH file led to a deletion")
	}
}

// Setting a blob's delete-at-height from several goroutines at once: every
// call succeeds, and the height left is one of theirs, whole. (Each call
// writes a temporary file of its own: with one shared name, a call could
// rename away the file another was about to rename.)
func TestConcurrentDAHUpdatesEachSucceed(t *testing.T) {
	s, dir := newStore(t)
	id := chainhash.Hash{7}
	if err := s.Put(ctx, id, blob.FileTypeTx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	const writers, rounds = 8, 200
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds)
	for w := 1; w <= writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				errs <- s.SetDAH(ctx, id, blob.FileTypeTx, uint32(w))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.Prune(ctx, writers); err != nil || n != 1 {
		t.Fatalf("prune at the highest height set: %d blobs deleted, %v", n, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*", ".tmp-*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// A store whose directory does not exist yet answers as an empty one, and
// its first blob creates the directory: a store that never needs one
// leaves no trace. A file in the directory's place is refused.
func TestDirectoryComesWithTheFirstBlob(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "blobs")
	s, err := blob.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	txid := chainhash.Hash{3}
	if _, err := s.Get(ctx, txid, blob.FileTypeTx); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("get: %v", err)
	}
	if n, err := s.Prune(ctx, 100); n != 0 || err != nil {
		t.Fatalf("prune: %d %v", n, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the directory exists before any blob: %v", err)
	}
	if err := s.Put(ctx, txid, blob.FileTypeTx, []byte("first")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, txid, blob.FileTypeTx); err != nil || string(got) != "first" {
		t.Fatalf("get after put: %q %v", got, err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := blob.NewFileStore(file); err == nil {
		t.Fatal("a store on a file opened")
	}
}
