package sozu

import (
	"os"
	"testing"
)

// TestValueLogWritesInBuffers: out-of-line values reach the value log's
// file a buffer at a time, not one write each. Values not yet written
// read from memory, and a crash (the store abandoned without a
// checkpoint) loses none: the write-ahead log holds them.
func TestValueLogWritesInBuffers(t *testing.T) {
	dir := t.TempDir()
	o := oneShardCompacting()
	o.ValueLogGarbageBytes = 1 << 30 // no compaction: the file only grows
	o.ValueLogBufferBytes = 8 << 10
	e := openFor(t, dir, o)
	appended := func(n int) (bytes int64) {
		for i := range n {
			bytes += int64(vlogHeaderSize + len(largeValue(i, 1)))
		}
		return bytes
	}
	fileSize := func() int64 {
		t.Helper()
		st, err := os.Stat(valueLogPath(dir, 0, 0))
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}

	putLarge(t, e, 0, 5, 1) // 5 KB: less than a buffer
	if n := fileSize(); n != 0 {
		t.Fatalf("value log file holds %d bytes after five values: want none before its buffer fills", n)
	}
	checkLarge(t, e, 5, 1)

	putLarge(t, e, 5, 40, 1) // 40 KB: four buffers written
	if n := fileSize(); n < 3*int64(o.ValueLogBufferBytes) || n >= appended(40) {
		t.Fatalf("value log file holds %d bytes of %d appended: want the full buffers (at least 3 of %d bytes) and not the last", n, appended(40), o.ValueLogBufferBytes)
	}
	checkLarge(t, e, 40, 1) // from the file, the previous buffer and the current one

	e.abandon()
	e = openFor(t, dir, o)
	defer e.Close()
	checkLarge(t, e, 40, 1)
}
