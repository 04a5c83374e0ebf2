package chain

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/btcsuite/btcd/wire"
)

// stream is the byte source under a BlockReader: a buffered reader, the
// number of bytes consumed so far, and an optional limit (the length of a
// blk*.dat frame). The limit is checked before every read so that a block
// reader never consumes bytes of the next frame from the shared buffer.
type stream struct {
	r     *bufio.Reader
	n     int64 // bytes consumed
	limit int64 // total bytes allowed, or -1 for none
}

// growStep bounds how much memory is reserved ahead of bytes actually read,
// so that a length prefix of 2^60 costs at most this much before the input
// runs dry.
const growStep = 1 << 20

func (s *stream) remaining() (int64, bool) {
	if s.limit < 0 {
		return 0, false
	}
	return s.limit - s.n, true
}

// appendN reads exactly n bytes and appends them to dst.
func (s *stream) appendN(dst []byte, n uint64) ([]byte, error) {
	if left, limited := s.remaining(); limited && n > uint64(left) {
		return dst, ErrTruncated
	}
	for n > 0 {
		chunk := int(min(n, growStep))
		start := len(dst)
		dst = slices.Grow(dst, chunk)[:start+chunk]
		got, err := io.ReadFull(s.r, dst[start:])
		s.n += int64(got)
		if err != nil {
			return dst[:start], readErr(err)
		}
		n -= uint64(chunk)
	}
	return dst, nil
}

// appendCompactSize reads one CompactSize, appends its bytes to dst and
// returns its value.
func (s *stream) appendCompactSize(dst []byte) ([]byte, uint64, error) {
	start := len(dst)
	dst, err := s.appendN(dst, 1)
	if err != nil {
		return dst, 0, err
	}
	if w := compactSizeWidth(dst[start]); w > 1 {
		if dst, err = s.appendN(dst, uint64(w-1)); err != nil {
			return dst, 0, err
		}
	}
	v, _, err := DecodeCompactSize(dst[start:])
	return dst, v, err
}

// peekByte returns the next byte without consuming it.
func (s *stream) peekByte() (byte, bool) {
	if left, limited := s.remaining(); limited && left < 1 {
		return 0, false
	}
	b, err := s.r.Peek(1)
	if err != nil {
		return 0, false
	}
	return b[0], true
}

// readErr maps the end of input to ErrTruncated (the caller only reads when
// it needs more bytes, so any end is premature) and keeps real I/O errors.
func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return ErrTruncated
	}
	return err
}

// readTxBytes appends one transaction's bytes from the stream to dst (which
// should be empty; offsets in errors count from its start), walking just
// enough of its structure (counts and lengths) to know where it ends. The
// result is then decoded by decodeTx, which aliases it; reading the bytes
// first is what lets a streamed transaction be parsed zero-copy, with no
// cap on its size. Errors are *ParseError relative to the transaction
// start.
func (s *stream) readTxBytes(dst []byte) ([]byte, error) {
	raw := dst
	fail := func(err error, field string, args ...any) ([]byte, error) {
		if len(args) > 0 {
			field = fmt.Sprintf(field, args...)
		}
		return nil, fieldErr(err, len(raw), field)
	}
	var err error
	if raw, err = s.appendN(raw, 4); err != nil {
		return fail(err, "version")
	}
	var numIn, numOut uint64
	if raw, numIn, err = s.appendCompactSize(raw); err != nil {
		return fail(err, "input count")
	}
	segwit := false
	if b, ok := s.peekByte(); ok && numIn == 0 && b == wire.WitnessFlag {
		segwit = true
		if raw, err = s.appendN(raw, 1); err != nil {
			return fail(err, "segwit flag")
		}
		if raw, numIn, err = s.appendCompactSize(raw); err != nil {
			return fail(err, "input count")
		}
	}
	for i := uint64(0); i < numIn; i++ {
		if raw, err = s.appendN(raw, 36); err != nil {
			return fail(err, "input %d previous outpoint", i)
		}
		if raw, err = s.appendVarBytes(raw); err != nil {
			return fail(err, "input %d unlocking script", i)
		}
		if raw, err = s.appendN(raw, 4); err != nil {
			return fail(err, "input %d sequence", i)
		}
	}
	if raw, numOut, err = s.appendCompactSize(raw); err != nil {
		return fail(err, "output count")
	}
	for i := uint64(0); i < numOut; i++ {
		if raw, err = s.appendN(raw, 8); err != nil {
			return fail(err, "output %d value", i)
		}
		if raw, err = s.appendVarBytes(raw); err != nil {
			return fail(err, "output %d locking script", i)
		}
	}
	if segwit {
		for i := uint64(0); i < numIn; i++ {
			var items uint64
			if raw, items, err = s.appendCompactSize(raw); err != nil {
				return fail(err, "input %d witness item count", i)
			}
			for j := uint64(0); j < items; j++ {
				if raw, err = s.appendVarBytes(raw); err != nil {
					return fail(err, "input %d witness item %d", i, j)
				}
			}
		}
	}
	if raw, err = s.appendN(raw, 4); err != nil {
		return fail(err, "lock time")
	}
	return raw, nil
}

func (s *stream) appendVarBytes(dst []byte) ([]byte, error) {
	dst, n, err := s.appendCompactSize(dst)
	if err != nil {
		return dst, err
	}
	return s.appendN(dst, n)
}
