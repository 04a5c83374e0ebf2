package server

import (
	"fmt"
	"strconv"
)

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// sats formats an amount as Blockbook does: satoshis in a decimal string.
func sats(v int64) string { return strconv.FormatInt(v, 10) }
