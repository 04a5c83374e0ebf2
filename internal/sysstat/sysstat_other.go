//go:build !linux

package sysstat

// DeviceWrites is not measured here: the block device's counters are
// Linux's (/sys/dev/block).
func DeviceWrites(string) (written int64, ok bool) { return 0, false }

// PeakRSS is not measured here: getrusage's units differ by system.
func PeakRSS() int64 { return 0 }
