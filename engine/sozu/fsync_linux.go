package sozu

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncData makes f's data durable with fdatasync: the log is overwritten
// in place in a recycled file, whose size and blocks then do not change,
// so the file system need not commit its journal, as fsync would for the
// modification time.
func syncData(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
