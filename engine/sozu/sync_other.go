//go:build !linux

package sozu

import "os"

// syncData makes f's data durable; without fdatasync, with fsync.
func syncData(f *os.File) error { return f.Sync() }
