package snapshot

import (
	"errors"
	"fmt"
)

// Sentinel causes of a refused file, wrapped by *FileError; test them with
// errors.Is.
var (
	// ErrTruncated: the file ends inside a field, or before the coins its
	// header counts.
	ErrTruncated = errors.New("the file ends early")
	// ErrCorrupt: a field holds a value the format does not allow.
	ErrCorrupt = errors.New("corrupt")
	// ErrTrailingData: bytes follow the last field of the file.
	ErrTrailingData = errors.New("data after the end")
)

// FileError locates a refused file's fault: the byte offset and the field
// being read there, and why.
type FileError struct {
	// Offset is the offset of Field from the start of the file.
	Offset int64
	// Field names what was being read, e.g. "coin 12 amount".
	Field string
	// Err is the cause: one of the sentinels, or a *MagicError,
	// *VersionError, *NetworkError or *ChecksumError.
	Err error
}

func (e *FileError) Error() string {
	return fmt.Sprintf("snapshot: at byte %d (%s): %v", e.Offset, e.Field, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// MagicError: the file does not start with the format's magic bytes.
type MagicError struct {
	Format      string
	Found, Want []byte
}

func (e *MagicError) Error() string {
	return fmt.Sprintf("not a %s file: it starts with %q, not %q", e.Format, e.Found, e.Want)
}

// VersionError: the file is of a version this build does not read.
type VersionError struct {
	Format           string
	Found, Supported string
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("%s version %s is not supported (this build reads version %s)", e.Format, e.Found, e.Supported)
}

// NetworkError: the file is another network's than the one asked for.
type NetworkError struct {
	// Found and Want name the networks (or give their magic bytes in hex
	// when unknown).
	Found, Want string
}

func (e *NetworkError) Error() string {
	return fmt.Sprintf("the snapshot is %s's, not %s's", e.Found, e.Want)
}

// ChecksumError: the file's SHA-256 differs from the one its sidecar file
// states.
type ChecksumError struct {
	Sidecar     string
	Found, Want string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("the file's SHA-256 is %s, but %s states %s", e.Found, e.Sidecar, e.Want)
}
