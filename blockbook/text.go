package blockbook

import (
	"fmt"
	"strconv"
)

// sats formats an amount as Blockbook does: satoshis in a decimal string.
func sats(v int64) string { return strconv.FormatInt(v, 10) }

// maxEcho is how much of a value the client sent an error repeats.
const maxEcho = 80

// echoed quotes a value the client sent for an error message, cut to its
// first maxEcho bytes: enough to recognise it, and a huge bogus value does
// not come back whole. A value holding a private key is never
// quoted, not even in part.
func echoed(s string) string {
	if HasPrivateKey(s) {
		return "(a private key, not shown)"
	}
	if len(s) <= maxEcho {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:maxEcho]), len(s))
}

// errorf is fmt.Errorf, for messages that start with a capital as
// Blockbook's do.
func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
