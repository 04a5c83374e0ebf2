package teranode

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/utxostore/utxostore/internal/fsutil"
	"github.com/utxostore/utxostore/snapshot"
	"github.com/utxostore/utxostore/snapshot/internal/binread"
)

// The magic bytes of each file type (Teranode's pkg/fileformat).
var (
	magicSet       = []byte("U-S-1.0 ")
	magicHeaders   = []byte("U-H-1.0 ")
	magicAdditions = []byte("U-A-1.0 ")
	magicDeletions = []byte("U-D-1.0 ")
)

// The file name extensions, after the block hash.
const (
	ExtSet       = ".utxo-set"
	ExtHeaders   = ".utxo-headers"
	ExtAdditions = ".utxo-additions"
	ExtDeletions = ".utxo-deletions"
	// ExtSidecar follows a file's name for the file holding its SHA-256.
	ExtSidecar = ".sha256"
)

// File is a file being written, hashed as it goes, under a temporary name
// beside its path (fsutil.CreatePartial); Close renames it to its path and
// writes its sidecar.
type File struct {
	f      *os.File
	w      *bufio.Writer
	sum    hash.Hash
	path   string
	placed bool
}

// Create starts the file path, which must not exist, under a temporary
// name beside it: a write killed before Close leaves nothing under path
// (only the temporary file, named by fsutil.PartialPrefix(path)).
func Create(path string) (*File, error) {
	if _, err := os.Lstat(path); err == nil {
		return nil, &os.PathError{Op: "create", Path: path, Err: os.ErrExist}
	}
	f, err := fsutil.CreatePartial(path)
	if err != nil {
		return nil, err
	}
	sum := sha256.New()
	return &File{f: f, w: bufio.NewWriterSize(io.MultiWriter(f, sum), 1<<20), sum: sum, path: path}, nil
}

func (f *File) Write(p []byte) (int, error) { return f.w.Write(p) }

// Close makes the file durable, renames it to its path and writes its
// sidecar, PATH.sha256, as Teranode's file store does:
// "<hex SHA-256>  <file name>\n".
func (f *File) Close() error {
	if err := f.w.Flush(); err != nil {
		f.f.Close()
		return err
	}
	if err := fsutil.PlacePartial(f.f, f.path); err != nil {
		return err
	}
	f.placed = true
	line := fmt.Sprintf("%x  %s\n", f.sum.Sum(nil), filepath.Base(f.path))
	return fsutil.WriteFileAtomic(f.path+ExtSidecar, []byte(line))
}

// Abort closes and removes the file, under its temporary name or, once
// Close placed it, its path, for a write that failed.
func (f *File) Abort() {
	f.f.Close()
	if f.placed {
		os.Remove(f.path)
		return
	}
	os.Remove(f.f.Name())
}

// CheckSidecar compares sum, the SHA-256 of the file at path, with the one
// its sidecar states. It reports whether a sidecar was there; a sidecar
// that differs is a *snapshot.ChecksumError, one that cannot be read is an
// error too.
func CheckSidecar(path string, sum []byte) (bool, error) {
	sidecar := path + ExtSidecar
	raw, err := os.ReadFile(sidecar)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	fields := strings.Fields(string(raw))
	want, decodeErr := hex.DecodeString(fieldOr(fields, 0))
	if len(fields) != 2 || decodeErr != nil || len(want) != sha256.Size {
		return true, fmt.Errorf("%s is not a SHA-256 sidecar (want \"<hex>  <name>\"): %q", sidecar, raw)
	}
	if !bytes.Equal(want, sum) {
		return true, &snapshot.ChecksumError{Sidecar: sidecar, Found: hex.EncodeToString(sum), Want: fields[0]}
	}
	return true, nil
}

func fieldOr(fields []string, i int) string {
	if i < len(fields) {
		return fields[i]
	}
	return ""
}

// hashingReader is a binread.Reader over r that hashes every byte it takes
// from r, so that once the file has been read to its end Sum is the
// file's SHA-256.
type hashingReader struct {
	*binread.Reader
	sum hash.Hash
}

func newHashingReader(r io.Reader) hashingReader {
	sum := sha256.New()
	return hashingReader{Reader: binread.New(io.TeeReader(r, sum)), sum: sum}
}

// readMagic reads a file's magic: want, or want with trailing NULs in place
// of its trailing spaces (Teranode reads those, written by its older
// builds). Another magic of the same file type is another version.
func readMagic(r *binread.Reader, want []byte, format string) error {
	found := make([]byte, len(want))
	if err := r.Full(found, "magic"); err != nil {
		return err
	}
	spaced := bytes.Clone(found)
	for i := len(spaced) - 1; i >= 0 && spaced[i] == 0; i-- {
		spaced[i] = ' '
	}
	switch {
	case bytes.Equal(spaced, want):
		return nil
	case bytes.HasPrefix(found, want[:4]): // "U-S-" and another version
		return r.Fail(0, "magic", &snapshot.VersionError{Format: format,
			Found: strings.TrimRight(string(found[4:]), " \x00"), Supported: strings.TrimSpace(string(want[4:]))})
	default:
		return r.Fail(0, "magic", &snapshot.MagicError{Format: format, Found: found, Want: want})
	}
}
