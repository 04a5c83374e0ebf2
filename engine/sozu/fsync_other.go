//go:build !linux

package sozu

import "os"

// syncData makes f's data durable; where fdatasync is not at hand, with
// fsync.
func syncData(f *os.File) error { return f.Sync() }
