package sozu

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// syncData makes f's data durable with fdatasync: a log appended within
// the blocks it already has (a recycled one) then commits nothing to the
// file system's journal.
func syncData(f *os.File) error {
	conn, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var syncErr error
	if err := conn.Control(func(fd uintptr) {
		for {
			if syncErr = unix.Fdatasync(int(fd)); !errors.Is(syncErr, unix.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	if syncErr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: syncErr}
	}
	return nil
}
