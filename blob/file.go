package blob

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/internal/fsutil"
)

// FileStore keeps each blob in its own file, <dir>/<xx>/<txid>.<type>, with
// its delete-at-height in a sidecar file <name>.dah. Writes go to a temporary
// file that is fsynced and then hard-linked (a blob: an existing one is
// never overwritten) or renamed (a sidecar) into place, so either is
// complete or absent, also after a power loss.
type FileStore struct {
	dir string
}

var _ Store = (*FileStore)(nil)

// NewFileStore opens a file store rooted at dir. The directory is created
// with the first blob, so a store that never needs one leaves no trace.
func NewFileStore(dir string) (*FileStore, error) {
	if info, err := os.Stat(dir); err == nil && !info.IsDir() {
		return nil, fmt.Errorf("blob: %s is not a directory", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("blob: %w", err)
	}
	return &FileStore{dir: dir}, nil
}

func (s *FileStore) path(txid chainhash.Hash, ft FileType) string {
	name := txid.String()
	return filepath.Join(s.dir, name[:2], name+"."+string(ft))
}

// Put implements Store.
func (s *FileStore) Put(_ context.Context, txid chainhash.Hash, ft FileType, data []byte) error {
	path := s.path(txid, ft)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	// link fails if the name exists: write-if-absent without a race.
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return ErrExists
		}
		return fmt.Errorf("blob: publishing %s: %w", path, err)
	}
	return fsutil.SyncDir(filepath.Dir(path))
}

// Get implements Store.
func (s *FileStore) Get(_ context.Context, txid chainhash.Hash, ft FileType) ([]byte, error) {
	data, err := os.ReadFile(s.path(txid, ft))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotFound
	}
	return data, err
}

// SetDAH implements Store.
func (s *FileStore) SetDAH(_ context.Context, txid chainhash.Hash, ft FileType, height uint32) error {
	path := s.path(txid, ft)
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return ErrNotFound
		}
		return err
	}
	if height == 0 {
		err := os.Remove(path + ".dah")
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	tmp, err := writeTemp(path+".dah", binary.BigEndian.AppendUint32(nil, height))
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path+".dah"); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("blob: publishing %s.dah: %w", path, err)
	}
	return fsutil.SyncDir(filepath.Dir(path))
}

// writeTemp writes data to a new temporary file beside path and fsyncs
// it, returning its name: renamed or linked into place, it is complete
// after a power loss, and each caller has its own.
func writeTemp(path string, data []byte) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return "", err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("blob: writing %s: %w", path, err)
	}
	return tmp.Name(), nil
}

// Delete implements Store.
func (s *FileStore) Delete(_ context.Context, txid chainhash.Hash, ft FileType) error {
	path := s.path(txid, ft)
	for _, p := range []string{path + ".dah", path} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// Prune implements Store: it walks the sidecar files and deletes the blobs
// whose height has come.
func (s *FileStore) Prune(_ context.Context, height uint32) (int, error) {
	deleted := 0
	if _, err := os.Stat(s.dir); errors.Is(err, os.ErrNotExist) {
		return 0, nil // no blob written yet
	}
	err := filepath.WalkDir(s.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".dah") {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if len(raw) != 4 {
			return fmt.Errorf("blob: %s is %d bytes, want 4: damaged delete-at-height", p, len(raw))
		}
		if binary.BigEndian.Uint32(raw) > height {
			return nil
		}
		blobPath := strings.TrimSuffix(p, ".dah")
		if err := os.Remove(blobPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		deleted++
		return os.Remove(p)
	})
	return deleted, err
}

// CopyTo copies the store's blobs and sidecars into dir, leaving out the
// writes in progress (their temporary files) and the files dir holds
// already, so that a second call adds what the first missed. A store with
// no blob yet copies as none.
func (s *FileStore) CopyTo(dir string) error {
	if _, err := os.Stat(s.dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return fsutil.CopyTree(s.dir, dir, func(rel string, _ fs.DirEntry) bool {
		return strings.HasPrefix(filepath.Base(rel), ".tmp-")
	})
}
