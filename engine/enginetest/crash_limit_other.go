//go:build !linux

package enginetest

import "errors"

const canLimitFileSize = false

func limitFileSize(int64) error { return errors.New("limiting file size is supported on Linux only") }
