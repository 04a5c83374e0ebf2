// Package sysstat reads the figures the benchmark reports: I/O from
// /proc/self/io and from the block device under a data directory, peak
// RSS from getrusage, and the size of a data directory. The process
// figures are process-wide, which is why bench runs each engine in a
// child process of its own.
package sysstat

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// IO is the process's I/O counters.
type IO struct {
	// WriteBytes is what the process caused to be sent to the block
	// device (Linux write_bytes); WChar what it passed to write calls.
	WriteBytes, WChar int64
	// OK is false where /proc/self/io cannot be read (not Linux).
	OK bool
}

// ReadIO reads /proc/self/io.
func ReadIO() IO {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return IO{}
	}
	var io IO
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, value, ok := bytes.Cut(sc.Bytes(), []byte(": "))
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(string(value), 10, 64)
		switch string(name) {
		case "write_bytes":
			io.WriteBytes, io.OK = n, true
		case "wchar":
			io.WChar = n
		}
	}
	return io
}

// DirSize is the total size of the regular files under dir.
func DirSize(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		return nil
	})
	return total, err
}
