package enginetest

import (
	"fmt"
	"os/signal"
	"syscall"
)

const canLimitFileSize = true

// limitFileSize makes every write of this process that would take a file
// past limit bytes fail with EFBIG, as writes fail on a full disk. The
// kernel would also send SIGXFSZ, whose default action kills the process:
// ignored, so the engine sees the error instead.
func limitFileSize(limit int64) error {
	signal.Ignore(syscall.SIGXFSZ)
	l := syscall.Rlimit{Cur: uint64(limit), Max: uint64(limit)}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &l); err != nil {
		return fmt.Errorf("limiting file size to %d bytes: %w", limit, err)
	}
	return nil
}
