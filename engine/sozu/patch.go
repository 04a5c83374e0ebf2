package sozu

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// A patch describes a new value as edits of the value it replaces, so that
// the log records what an update changed rather than the whole record: a
// spend rewrites a record of hundreds of bytes to change a counter near
// its start and one output near its end, a set-mined a few fields.
//
// The edits are a sequence of
//
//	uvarint keep  uvarint delete  uvarint n  [n]byte insert
//
// each copying keep bytes of the old value from where the previous edit
// stopped, skipping delete bytes of it and inserting n new bytes; the old
// value's remaining bytes follow the last edit. No edits at all is the old
// value unchanged.
//
// appendEdits finds the common prefix and suffix of the two values, then,
// between them, the stretches that hold the same bytes at the same offset
// in both (a field rewritten in place, the bytes before an output that a
// spend extends), and sends the rest.

// minKeep is the shortest stretch of unchanged bytes between two changes
// that ends an edit: a shorter one costs fewer bytes sent as part of the
// insert than the header (three varints) of another edit.
const minKeep = 8

// appendEdits appends to dst the edits that turn old into value.
func appendEdits(dst, old, value []byte) []byte {
	prefix := commonPrefix(old, value)
	suffix := commonSuffix(old[prefix:], value[prefix:])
	// Between prefix and suffix: offsets from prefix, the same in both.
	was, is := old[prefix:len(old)-suffix], value[prefix:len(value)-suffix]
	// keep is how many old bytes the next edit copies first, at how much
	// of was the edits and keep take so far: as much as of is (i) until
	// the last change, which takes what is left of was.
	keep, at := prefix, 0
	for i := 0; i < len(is); {
		next := nextUnchanged(was, is, i)
		remove := next - i
		if next == len(is) {
			remove = len(was) - i
		}
		dst = appendEdit(dst, keep, remove, is[i:next])
		at = i + remove
		keep = commonPrefix(was[at:], is[next:])
		at, i = at+keep, next+keep
	}
	if at < len(was) {
		dst = appendEdit(dst, keep, len(was)-at, nil)
	}
	return dst
}

func appendEdit(dst []byte, keep, remove int, insert []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(keep))
	dst = binary.AppendUvarint(dst, uint64(remove))
	dst = binary.AppendUvarint(dst, uint64(len(insert)))
	return append(dst, insert...)
}

// nextUnchanged is the first offset from i on where was and is hold
// minKeep equal bytes, or len(is) if none.
func nextUnchanged(was, is []byte, i int) int {
	run := 0
	for j := i; j < min(len(was), len(is)); j++ {
		if was[j] != is[j] {
			run = 0
			continue
		}
		if run++; run == minKeep {
			return j + 1 - minKeep
		}
	}
	return len(is)
}

// commonPrefix is how many bytes a and b share at their start, compared a
// word at a time: every update runs it over most of a record.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// commonSuffix is how many bytes a and b share at their end.
func commonSuffix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[len(a)-i-8:]) ^ binary.LittleEndian.Uint64(b[len(b)-i-8:]); x != 0 {
			return i + bits.LeadingZeros64(x)/8
		}
	}
	for i < n && a[len(a)-1-i] == b[len(b)-1-i] {
		i++
	}
	return i
}

// applyEdits appends to dst the value that edits (appendEdits') make of old.
func applyEdits(dst, old, edits []byte) ([]byte, error) {
	at := uint64(0)
	for len(edits) > 0 {
		var keep, remove, n uint64
		var err error
		if keep, edits, err = readUvarint(edits); err != nil {
			return nil, err
		}
		if remove, edits, err = readUvarint(edits); err != nil {
			return nil, err
		}
		if n, edits, err = readUvarint(edits); err != nil {
			return nil, err
		}
		left := uint64(len(old)) - at
		if keep > left || remove > left-keep || n > uint64(len(edits)) {
			return nil, fmt.Errorf("edit (keep %d, delete %d, insert %d) runs past the old value's %d bytes from %d or the record's end", keep, remove, n, len(old), at)
		}
		dst = append(dst, old[at:at+keep]...)
		dst = append(dst, edits[:n]...)
		at += keep + remove
		edits = edits[n:]
	}
	return append(dst, old[at:]...), nil
}
