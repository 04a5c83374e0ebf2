package record

import "strings"

// Signal is the set of follow-up actions an operation asks of its caller.
// A record only knows itself; the signals are how the caller learns that it
// must update the master (a child became fully spent), the child records
// (the master's delete-at-height changed) or the external blob.
type Signal uint8

const (
	// SignalAllSpent: every output stored in this record is now spent
	// (it was not before the operation). On a child record the caller
	// increments the master's SpentExtraRecs.
	SignalAllSpent Signal = 1 << iota
	// SignalNotAllSpent: the record was fully spent and no longer is. On a
	// child record the caller decrements the master's SpentExtraRecs.
	SignalNotAllSpent
	// SignalDAHSet: DeleteAtHeight was set (or moved later). The caller
	// copies it to the child records and the external blob.
	SignalDAHSet
	// SignalDAHUnset: DeleteAtHeight was cleared. The caller clears it on
	// the child records and the external blob.
	SignalDAHUnset
	// SignalPreserve: PreserveUntil was set and any DAH cleared. The caller
	// does the same for the child records and the external blob.
	SignalPreserve
)

var signalNames = []struct {
	s    Signal
	name string
}{
	{SignalAllSpent, "ALLSPENT"},
	{SignalNotAllSpent, "NOTALLSPENT"},
	{SignalDAHSet, "DAHSET"},
	{SignalDAHUnset, "DAHUNSET"},
	{SignalPreserve, "PRESERVE"},
}

// Has reports whether every signal in t is in s.
func (s Signal) Has(t Signal) bool { return s&t == t }

// String lists the signals with the reference names, e.g. "ALLSPENT|DAHSET".
func (s Signal) String() string {
	if s == 0 {
		return ""
	}
	var parts []string
	for _, n := range signalNames {
		if s.Has(n.s) {
			parts = append(parts, n.name)
		}
	}
	return strings.Join(parts, "|")
}
