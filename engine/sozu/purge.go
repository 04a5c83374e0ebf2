package sozu

// purgeable reports whether the purge loop may hard-delete e at longest-
// chain height h: its delete-at-height has been reached on the longest
// chain and nothing asks to preserve it beyond h, or its time to live has
// passed (an expired record is already invisible). A record without a DAH
// is never purged: the record layer deletes what it must explicitly, and
// the purge is only the engine's lazy cleanup behind it.
func purgeable(e *entry, h uint32, now int64) bool {
	if !e.live(now) {
		return true
	}
	dah := e.terms.DeleteAtHeight
	return dah != 0 && h != 0 && dah <= h && e.terms.PreserveUntil <= h
}

// lastsUntilRemoved reports whether only a remove can take e: it never
// expires and has no delete-at-height, so no purge does. A replay of the
// log then finds e where the updates that followed it found it, however
// its purges fall, and the log may record an update of e as a patch of
// its value (logRecords.logUpdate).
func (e *entry) lastsUntilRemoved() bool {
	return e.expiresAt == 0 && e.terms.DeleteAtHeight == 0
}

// purge removes the purgeable entries of b (a bucket of layer) and returns
// how many went.
func (t *table) purge(layer int, b *bucket) int {
	n, now := 0, t.now()
	for i := 0; i < len(b.entries); {
		if purgeable(&b.entries[i], t.height, now) {
			e := t.removeFrom(layer, b, i)
			t.forget(&e)
			n++
			continue
		}
		i++
	}
	t.purged += uint64(n)
	return n
}
