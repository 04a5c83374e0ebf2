package blockpath

// The steps of the path, as a crash test names the point it stops the
// process at.
const (
	stepConnect    = "connect"
	stepDisconnect = "disconnect"

	stepChecked   = "checked"
	stepKept      = "kept"
	stepStored    = "stored"
	stepIndexed   = "indexed"
	stepUnindexed = "unindexed"
	stepUnstored  = "unstored"
	stepDropped   = "dropped"
)

// stepHook, when set, hears of every step the path has completed. Only the
// crash tests set it (crashpoints.go, built with the crashpoints tag).
var stepHook func(op, step string, height uint32)

// passed reports a completed step to stepHook.
func passed(op, step string, height uint32) {
	if stepHook != nil {
		stepHook(op, step, height)
	}
}
