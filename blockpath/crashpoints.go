//go:build crashpoints

package blockpath

import (
	"fmt"
	"os"
	"syscall"
)

// A binary built with -tags crashpoints kills itself with SIGKILL right
// after the step UTXOSTORE_CRASH_AT names ("connect/kept/640",
// "disconnect/unindexed/2002"): the crash tests stop it between any two
// steps of the path.
func init() {
	at := os.Getenv("UTXOSTORE_CRASH_AT")
	if at == "" {
		return
	}
	stepHook = func(op, step string, height uint32) {
		if fmt.Sprintf("%s/%s/%d", op, step, height) == at {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
}
