// Package binread reads the fields of a snapshot file from a stream,
// counting the offset so that a refusal can name the byte it happened at.
package binread

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/snapshot"
)

// Reader reads little-endian fields and CompactSizes. Its errors are
// *snapshot.FileError.
type Reader struct {
	r   *bufio.Reader
	off int64
}

// New reads from r, buffered.
func New(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 1<<20)}
}

// Offset is the number of bytes read so far.
func (r *Reader) Offset() int64 { return r.off }

// Fail returns the error for field at the offset where it starts.
func (r *Reader) Fail(at int64, field string, err error) error {
	return &snapshot.FileError{Offset: at, Field: field, Err: err}
}

// Failf is Fail with snapshot.ErrCorrupt and an explanation.
func (r *Reader) Failf(at int64, field, format string, args ...any) error {
	return r.Fail(at, field, fmt.Errorf("%w: %s", snapshot.ErrCorrupt, fmt.Sprintf(format, args...)))
}

// Full fills b; the field ending early is snapshot.ErrTruncated.
func (r *Reader) Full(b []byte, field string) error {
	at := r.off
	n, err := io.ReadFull(r.r, b)
	r.off += int64(n)
	return r.readErr(at, field, err)
}

func (r *Reader) readErr(at int64, field string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return r.Fail(at, field, snapshot.ErrTruncated)
	default:
		return r.Fail(at, field, err)
	}
}

// Byte reads one byte.
func (r *Reader) Byte(field string) (byte, error) {
	b, err := r.r.ReadByte()
	if err != nil {
		return 0, r.readErr(r.off, field, err)
	}
	r.off++
	return b, nil
}

// Uint16 reads a little-endian uint16.
func (r *Reader) Uint16(field string) (uint16, error) {
	var b [2]byte
	err := r.Full(b[:], field)
	return binary.LittleEndian.Uint16(b[:]), err
}

// Uint32 reads a little-endian uint32.
func (r *Reader) Uint32(field string) (uint32, error) {
	var b [4]byte
	err := r.Full(b[:], field)
	return binary.LittleEndian.Uint32(b[:]), err
}

// Uint64 reads a little-endian uint64.
func (r *Reader) Uint64(field string) (uint64, error) {
	var b [8]byte
	err := r.Full(b[:], field)
	return binary.LittleEndian.Uint64(b[:]), err
}

// Hash reads 32 bytes.
func (r *Reader) Hash(field string) (chainhash.Hash, error) {
	var h chainhash.Hash
	err := r.Full(h[:], field)
	return h, err
}

// CompactSize reads a canonical CompactSize of at most limit.
func (r *Reader) CompactSize(field string, limit uint64) (uint64, error) {
	at := r.off
	peek, err := r.r.Peek(9)
	if len(peek) == 0 {
		return 0, r.readErr(at, field, err)
	}
	v, width, err := chain.DecodeCompactSize(peek)
	switch {
	case errors.Is(err, chain.ErrTruncated):
		return 0, r.Fail(at, field, snapshot.ErrTruncated)
	case err != nil:
		return 0, r.Failf(at, field, "%v", err)
	case v > limit:
		return 0, r.Failf(at, field, "%d is above the limit of %d", v, limit)
	}
	r.r.Discard(width)
	r.off += int64(width)
	return v, nil
}

// Bytes reads an n-byte field into a new slice. The slice grows as the
// bytes arrive, so a damaged length costs no more memory than the bytes
// the stream holds.
func (r *Reader) Bytes(n uint64, field string) ([]byte, error) {
	const step = 1 << 20
	b := make([]byte, 0, min(n, step))
	for uint64(len(b)) < n {
		chunk := min(n-uint64(len(b)), step)
		b = slices.Grow(b, int(chunk))
		at := len(b)
		b = b[:at+int(chunk)]
		if err := r.Full(b[at:], field); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// Skip discards n bytes.
func (r *Reader) Skip(n int64, field string) error {
	at := r.off
	got, err := r.r.Discard(int(n))
	r.off += int64(got)
	return r.readErr(at, field, err)
}

// Peek returns the next n bytes without reading them, or fewer when the
// stream ends before them.
func (r *Reader) Peek(n int) ([]byte, error) {
	b, err := r.r.Peek(n)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	if err != nil {
		return nil, r.Fail(r.off, "next field", err)
	}
	return b, nil
}

// AtEnd reports whether the stream has no byte left.
func (r *Reader) AtEnd() (bool, error) {
	_, err := r.r.Peek(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	if err != nil {
		return false, r.Fail(r.off, "end of file", err)
	}
	return false, nil
}
