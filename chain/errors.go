package chain

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel causes, wrapped by [ParseError] and [FrameError]; test them with
// errors.Is.
var (
	// ErrTruncated means the input ended inside a field: a short read, or a
	// length or count that claims more bytes than remain.
	ErrTruncated = errors.New("truncated")

	// ErrNonCanonicalVarInt means a CompactSize used more bytes than its
	// value needs. Bitcoin nodes reject these, and accepting them would
	// break the guarantee that a parsed value re-serialises byte-exact.
	ErrNonCanonicalVarInt = errors.New("non-canonical CompactSize")

	// ErrTrailingBytes means a complete value was followed by bytes that
	// belong to nothing (inside a transaction buffer, a block frame or a raw
	// block file).
	ErrTrailingBytes = errors.New("trailing bytes after value")

	// ErrSuperfluousWitness means a transaction used the segwit marker and
	// flag but carried no witness items; Bitcoin Core rejects it too, and it
	// could not be re-serialised to the same bytes.
	ErrSuperfluousWitness = errors.New("witness flag set but no witness data")

	// ErrNotExtendedFormat means the bytes lack the BIP-239 marker.
	ErrNotExtendedFormat = errors.New("not Extended Format (missing 0000000000EF marker)")

	// ErrWitnessInEF means a transaction with witness data was given to the
	// Extended Format encoder, which (like BIP-239) has no place for it.
	ErrWitnessInEF = errors.New("witness data cannot be carried in Extended Format")

	// ErrPrevOutputCount means an EFTx has a different number of previous
	// outputs than inputs.
	ErrPrevOutputCount = errors.New("previous output count differs from input count")

	// ErrUnknownFormat means a file is neither blk*.dat framing with a known
	// magic nor a raw block.
	ErrUnknownFormat = errors.New("unknown block file format")

	// ErrOtherNetwork means a block file's magic belongs to another network
	// than the one asked for.
	ErrOtherNetwork = errors.New("block file of another network")
)

// ParseError locates a decoding failure: which transaction, which field, and
// where. Offsets let an operator find the bad byte with a hex dump of a
// multi-gigabyte file instead of guessing.
type ParseError struct {
	// Tx is the index of the transaction within its block, or -1 when the
	// failure is not inside a block's transaction list.
	Tx int64
	// Field names what was being read, e.g. "output 3 locking script".
	Field string
	// Offset is the byte offset of Field from the start of the unit being
	// parsed: the block when Tx >= 0 or the field is a block field,
	// otherwise the transaction (or EF buffer).
	Offset int64
	// Err is the cause, usually one of the sentinels above.
	Err error
}

func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString("chain: ")
	if e.Tx >= 0 {
		fmt.Fprintf(&b, "tx %d: ", e.Tx)
	}
	fmt.Fprintf(&b, "%s at offset %d: %v", e.Field, e.Offset, e.Err)
	return b.String()
}

func (e *ParseError) Unwrap() error { return e.Err }

// fieldErr builds a ParseError outside any block context.
func fieldErr(err error, offset int, field string) *ParseError {
	return &ParseError{Tx: -1, Field: field, Offset: int64(offset), Err: err}
}

// inTx re-anchors a transaction-relative error inside a block: it records
// the transaction index and shifts the offset by where the transaction
// starts, so the offset points into the block.
func inTx(err error, index uint64, txStart int64) error {
	var pe *ParseError
	if errors.As(err, &pe) && pe.Tx < 0 {
		moved := *pe
		moved.Tx = int64(index)
		moved.Offset += txStart
		return &moved
	}
	return &ParseError{Tx: int64(index), Field: "transaction", Offset: txStart, Err: err}
}

// MagicError reports a blk*.dat frame whose network magic is not the one
// expected, which usually means the file is from another network or the
// reader has lost its place.
type MagicError struct {
	Offset int64 // file offset of the frame
	Want   Magic
	Got    Magic
}

func (e *MagicError) Error() string {
	return fmt.Sprintf("chain: wrong network magic at file offset %d: expected %s (%s), found %s (%s)",
		e.Offset, e.Want, e.Want.Network(), e.Got, e.Got.Network())
}

// FrameError places an error inside a blk*.dat file: which frame (0-based
// block number in the file) and the file offset where that frame starts.
type FrameError struct {
	Frame  int64
	Offset int64
	Err    error
}

func (e *FrameError) Error() string {
	// The cause is usually one of this package's errors; drop its prefix
	// so the message reads as one sentence.
	cause := strings.TrimPrefix(e.Err.Error(), "chain: ")
	return fmt.Sprintf("chain: block frame %d at file offset %d: %s", e.Frame, e.Offset, cause)
}

func (e *FrameError) Unwrap() error { return e.Err }
