package sozu

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// logTail describes what recovery found after the last good record: the
// end of the log, a tear (a write that no fsync covered, cut), or damage
// to records an fsync had made durable.
type logTail struct {
	// goodBytes is the length of the valid prefix, the file header included.
	goodBytes int64
	// droppedBytes is how much followed it that this generation wrote;
	// non-zero means a torn tail.
	droppedBytes int64
	// staleBytes is how much of the file past the valid prefix holds an
	// earlier generation's records (a recycled file) or only zeros (a
	// growing one): not a tear.
	staleBytes int64
	// midLog reports a bad record followed by a valid one: not a torn
	// write but corruption inside the log.
	midLog bool
	detail string
}

// tailAt describes the log past its valid records, which end at off; why
// is what is wrong with the record there ("" if it is whole: an earlier
// generation's).
func (w *logWindow) tailAt(off int64, why string, gen uint64, writeEnd int64) (logTail, error) {
	tail := logTail{goodBytes: off}
	if off >= w.size {
		return tail, nil
	}
	if why == "" {
		// An earlier generation's whole record: this one's ended here.
		tail.staleBytes = w.size - off
		return tail, nil
	}
	unwritten, err := w.zeroFrom(off)
	if err != nil {
		return logTail{}, err
	}
	if unwritten {
		// The zeros a growing log was extended with (extend): nothing was
		// written here.
		tail.staleBytes = w.size - off
		return tail, nil
	}
	torn := false
	if head, err := w.at(off, walHeaderSize); err == nil && len(head) == walHeaderSize {
		torn = binary.LittleEndian.Uint32(head[8:]) == uint32(gen)
	}
	earlier, after, err := w.recordsAfterTear(off, gen, writeEnd)
	if err != nil {
		return logTail{}, err
	}
	if after.damage != "" {
		tail.midLog = true
		tail.droppedBytes = w.size - off
		tail.detail = fmt.Sprintf("%s at offset %d, yet %s", why, off, after.damage)
		return tail, nil
	}
	if torn || earlier == w.size || after.records > 0 {
		tail.droppedBytes, tail.detail = earlier-off, fmt.Sprintf("%s at offset %d", why, off)
	}
	if after.records > 0 {
		tail.detail = fmt.Sprintf("%s at offset %d, then %d valid records written before it was durable (a power loss kept their blocks, not its)", why, off, after.records)
	}
	tail.staleBytes = w.size - off - tail.droppedBytes
	return tail, nil
}

// zeroFrom reports whether the file holds only zeros from off to its end.
func (w *logWindow) zeroFrom(off int64) (bool, error) {
	for off < w.size {
		chunk, err := w.at(off, len(zeroBlock))
		if err != nil {
			return false, err
		}
		if !bytes.Equal(chunk, zeroBlock[:len(chunk)]) {
			return false, nil
		}
		off += int64(len(chunk))
	}
	return true, nil
}

// afterTear is what follows a bad record of the log: how many valid
// records of its generation, and why they show damage rather than a tear
// ("" if they do not).
type afterTear struct {
	records int
	damage  string
}

// recordsAfterTear looks at what follows the bad record at off, up to the
// first record of an earlier generation (whose offset it returns, or the
// file's size). writeEnd is the end of the write the last mark before off
// described.
//
// A valid record of this generation after a bad one is damage unless it
// was written before the bad record was durable: then nothing past the
// bad record was acknowledged, and a power loss that kept this record's
// block but not the bad one's explains what the disk shows. A mark says
// so of its write (its durable length is at most off), and of every write
// before it, since the durable length only grows; the write the bad record
// belongs to was made before it was durable by definition. A record no
// such mark vouches for, or a mark of a write made after off was durable,
// is damage. (Damage to the last write an fsync covered, with nothing
// written after the fsync, reads as a tear as a damaged final record
// does: no later record says the fsync happened.)
func (w *logWindow) recordsAfterTear(off int64, gen uint64, writeEnd int64) (int64, afterTear, error) {
	var after afterTear
	vouched := writeEnd // records before this offset were written before off was durable
	lastRecord := int64(-1)
	for next := off + 1; next+walHeaderSize < w.size; {
		r, err := w.record(next, gen)
		if err != nil {
			return 0, after, err
		}
		if r.why != "" {
			next++
			continue
		}
		if r.gen != uint32(gen) {
			return next, after, nil
		}
		if durable, end, ok := readMark(r.body); ok {
			if durable > off {
				after.damage = fmt.Sprintf("a write made once the log was durable to offset %d follows at offset %d", durable, next)
				return w.size, after, nil
			}
			vouched = max(vouched, end)
		} else {
			after.records++
			lastRecord = next
		}
		next += int64(r.length)
	}
	if lastRecord >= vouched {
		after.damage = fmt.Sprintf("a valid record follows at offset %d", lastRecord)
	}
	return w.size, after, nil
}
