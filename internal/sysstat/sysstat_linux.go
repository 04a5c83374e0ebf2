package sysstat

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// DeviceWrites is the bytes written to the block device that holds dir
// since boot (/sys/dev/block/MAJ:MIN/stat), after writing out what the
// file system holds dirty, so that a difference of two readings counts
// what the writes in between cost the device. ok is false where there is
// no such device (tmpfs, overlay) or no /sys.
//
// It is the measure of device writes where the process's write_bytes is
// not: since Linux 6.16 ext4 caches files in large folios, and dirtying a
// few bytes of a clean folio charges write_bytes the whole folio, though
// only the changed blocks are written (18 KiB rewritten in place in each
// of 3,000 folios of 1 MiB: write_bytes 3,052 MB, the device 64 MB). It
// counts every process writing to that device, and the file system's own
// writes (journal, metadata): run benchmarks alone.
//
// A dir that does not exist yet is measured on the device of its nearest
// existing parent, where it will be created: a store creates its data
// directory as it opens, after the first reading.
func DeviceWrites(dir string) (written int64, ok bool) {
	dir = nearestExisting(dir)
	if err := syncFS(dir); err != nil {
		return 0, false
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, false
	}
	data, err := os.ReadFile(fmt.Sprintf("/sys/dev/block/%d:%d/stat", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		return 0, false
	}
	// The seventh field counts 512-byte sectors written, whatever the
	// device's own sector size.
	fields := strings.Fields(string(data))
	if len(fields) < 7 {
		return 0, false
	}
	sectors, err := strconv.ParseInt(fields[6], 10, 64)
	if err != nil {
		return 0, false
	}
	return sectors * 512, true
}

// nearestExisting is path, or its nearest parent that exists.
func nearestExisting(path string) string {
	path = filepath.Clean(path)
	for {
		if _, err := os.Stat(path); err == nil {
			return path
		}
		parent := filepath.Dir(path)
		if parent == path {
			return path
		}
		path = parent
	}
}

// syncFS writes out everything dirty in the file system holding dir.
func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}

// PeakRSS is the process's maximum resident set size in bytes: VmHWM of
// /proc/self/status, the high-water mark of the process's own memory.
// Not getrusage's ru_maxrss, which a process started by exec inherits
// from the process that started it (Go's exec shares the parent's memory
// until the exec, whose peak Linux then carries over): a child of a large
// process would report the parent's peak. It only grows over the
// process's life.
func PeakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kib * 1024
		}
	}
	return 0
}
