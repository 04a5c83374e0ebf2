package index

import (
	"bufio"
	"bytes"
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/objstorage"
	"github.com/cockroachdb/pebble/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// writes is where connecting and disconnecting a block put their changes:
// a Pebble batch for one block, bulkWrites for a bulk import's blocks.
type writes interface {
	Set(key, value []byte, _ *pebble.WriteOptions) error
	Delete(key []byte, _ *pebble.WriteOptions) error
}

// bulkWrites gathers the changes of a bulk import's blocks and writes
// them in one piece (commit). Small changes are a Pebble batch, which the
// memtable absorbs, so that a small import's flushes cost one log write
// each and are compacted together. Once they reach half a memtable, the
// size from which Pebble itself would write a batch as a table of its
// own, they move out of the batch and go in as a sorted table that Pebble
// takes in (ingest): a batch of hundreds of megabytes is written to
// Pebble's log, sorted by Pebble with a comparison that decodes both keys
// from the batch, and then written again as a table when its memtable is
// flushed. The changes are written once, from runs of fixed-size entries
// each sorted on its own, mostly by 8-byte prefixes, and merged into
// tables: one for each processor, each a range of keys, written
// concurrently and taken in by Pebble together. Nothing held there is
// ever copied to grow: keys and values go into chunks, entries into runs,
// each allocated once.
type bulkWrites struct {
	ix *Index
	// small holds the changes until they reach tableBytes (zero: never);
	// it is nil once they have moved to chunks and runs.
	small      *pebble.Batch
	tableBytes int
	// chunks hold the keys and values, each change's key then value in
	// one chunk.
	chunks [][]byte
	// runs hold the changes in order, runLen (zero: opsPerRun) in each
	// but the last; tests shorten them.
	runs   [][]bulkOp
	runLen int
	// tables is how many tables, one range of keys each, a flush writes
	// at most (zero: one for each processor, runtime.GOMAXPROCS, each of
	// at least minTableBytes); tests set it.
	tables int
	n      int // changes
	bytes  int // the keys' and values' bytes
}

// bulkOp is one change. prefix is the key's first 8 bytes, big-endian
// and zero-padded, which orders most keys without reading them; seq is
// its place among the changes, so that the last change of a key wins.
type bulkOp struct {
	prefix         uint64
	chunk, off     uint32
	keyLen, valLen uint32
	seq            uint32
	delete         bool
}

// chunkSize is the size of a chunk (a larger change gets one of its own).
const chunkSize = 4 << 20

// opsPerRun is the length of a run: 2 MiB of entries, which sort in the
// processor's cache.
const opsPerRun = 1 << 16

// minTableBytes is the least a flush writes into each of its tables:
// below it, Pebble would take in and compact many small files.
const minTableBytes = 16 << 20

// ingestFilePattern names, in the index's directory, the tables a bulk
// flush writes before Pebble takes them in (and removes them), one for
// each range of keys. A crash can leave them behind; Open removes them
// (ingestFileGlob).
const (
	ingestFilePattern = "bulk-flush-%d.sst"
	ingestFileGlob    = "bulk-flush-*.sst"
)

func (w *bulkWrites) add(key, value []byte, del bool) {
	n := len(key) + len(value)
	if len(w.chunks) == 0 || cap(w.chunks[len(w.chunks)-1])-len(w.chunks[len(w.chunks)-1]) < n {
		w.chunks = append(w.chunks, make([]byte, 0, max(chunkSize, n)))
	}
	c := &w.chunks[len(w.chunks)-1]
	off := len(*c)
	*c = append(append(*c, key...), value...)
	if len(w.runs) == 0 || len(w.runs[len(w.runs)-1]) == cap(w.runs[len(w.runs)-1]) {
		w.runs = append(w.runs, make([]bulkOp, 0, cmp.Or(w.runLen, opsPerRun)))
	}
	var prefix [8]byte
	copy(prefix[:], key)
	r := &w.runs[len(w.runs)-1]
	*r = append(*r, bulkOp{prefix: binary.BigEndian.Uint64(prefix[:]),
		chunk: uint32(len(w.chunks) - 1), off: uint32(off), keyLen: uint32(len(key)), valLen: uint32(len(value)),
		seq: uint32(w.n), delete: del})
	w.n++
	w.bytes += n
}

// Set records that key holds value.
func (w *bulkWrites) Set(key, value []byte, _ *pebble.WriteOptions) error {
	if w.small == nil {
		w.add(key, value, false)
		return nil
	}
	if err := w.small.Set(key, value, nil); err != nil {
		return err
	}
	return w.moveIfLarge()
}

// Delete records that key is deleted.
func (w *bulkWrites) Delete(key []byte, _ *pebble.WriteOptions) error {
	if w.small == nil {
		w.add(key, nil, true)
		return nil
	}
	if err := w.small.Delete(key, nil); err != nil {
		return err
	}
	return w.moveIfLarge()
}

// moveIfLarge moves the changes out of the batch once they reach
// tableBytes.
func (w *bulkWrites) moveIfLarge() error {
	if w.tableBytes == 0 || w.small.Len() < w.tableBytes {
		return nil
	}
	r := w.small.Reader()
	for {
		kind, key, value, ok, err := r.Next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		switch kind {
		case pebble.InternalKeyKindSet:
			w.add(key, value, false)
		case pebble.InternalKeyKindDelete:
			w.add(key, nil, true)
		default:
			return fmt.Errorf("index: a bulk import's batch holds a change of kind %v", kind)
		}
	}
	err := w.small.Close()
	w.small = nil
	return err
}

// Len is the bytes of the changes recorded.
func (w *bulkWrites) Len() int {
	if w.small != nil {
		return w.small.Len()
	}
	return w.bytes
}

func (w *bulkWrites) key(o *bulkOp) []byte {
	return w.chunks[o.chunk][o.off : o.off+o.keyLen]
}

func (w *bulkWrites) value(o *bulkOp) []byte {
	start := o.off + o.keyLen
	return w.chunks[o.chunk][start : start+o.valLen]
}

// newBulkWrites holds changes for ix, in a batch up to half a memtable.
func newBulkWrites(ix *Index) *bulkWrites {
	return &bulkWrites{ix: ix, small: ix.db.NewBatch(), tableBytes: int(ix.pebbleOpts.MemTableSize / 2)}
}

// reset forgets every change.
func (w *bulkWrites) reset() {
	ix, tableBytes, runLen, tables := w.ix, w.tableBytes, w.runLen, w.tables
	w.close()
	*w = bulkWrites{ix: ix, small: ix.db.NewBatch(), tableBytes: tableBytes, runLen: runLen, tables: tables}
}

// close forgets every change and gives the batch back.
func (w *bulkWrites) close() {
	if w.small != nil {
		w.small.Close()
	}
	*w = bulkWrites{}
}

// commit writes the changes into the index atomically: the batch, or the
// table the changes moved to. Reads made before it returns do not see
// them.
func (w *bulkWrites) commit() error {
	if w.small != nil {
		return w.small.Commit(w.ix.wo)
	}
	return w.ingest()
}

// ingest writes the changes into tables (writeTables) and has Pebble
// take them in, all in one step: atomically, and durable when it returns,
// whatever Options.NoSync says.
func (w *bulkWrites) ingest() error {
	ix := w.ix
	paths, err := w.writeTables(ix.dir)
	if err != nil {
		return errors.Join(err, removeTables(paths))
	}
	if err := ix.db.Ingest(paths); err != nil {
		return errors.Join(fmt.Errorf("taking in the bulk flush's tables: %w", err), removeTables(paths))
	}
	ix.ingestedBytes += uint64(w.bytes)
	return nil
}

// writeTables sorts the changes and writes them, each key's last alone,
// into tables in dir, one range of keys each, written concurrently: a
// large flush is otherwise one processor's work while the blocks wait.
// It returns the tables' paths, empty ranges left out, and on failure the
// paths it may have written.
func (w *bulkWrites) writeTables(dir string) ([]string, error) {
	w.sortRuns()
	var paths []string
	var ranges [][][]bulkOp
	n := w.tables
	if n == 0 {
		n = max(1, min(runtime.GOMAXPROCS(0), w.bytes/minTableBytes))
	}
	for i, runs := range w.split(n) {
		if slices.ContainsFunc(runs, func(r []bulkOp) bool { return len(r) > 0 }) {
			paths = append(paths, filepath.Join(dir, fmt.Sprintf(ingestFilePattern, i)))
			ranges = append(ranges, runs)
		}
	}
	errs := make([]error, len(paths))
	var wg sync.WaitGroup
	for i := range paths {
		wg.Go(func() { errs[i] = w.writeTable(paths[i], ranges[i]) })
	}
	wg.Wait()
	return paths, errors.Join(errs...)
}

// writeTable writes the changes of runs, each sorted, into a new table at
// path, synced: merged, each key's last alone.
func (w *bulkWrites) writeTable(path string, runs [][]bulkOp) error {
	f, err := vfs.Default.Create(path)
	if err != nil {
		return err
	}
	opts := w.ix.pebbleOpts.MakeWriterOptions(0, w.ix.db.FormatMajorVersion().MaxTableFormat())
	t := sstable.NewWriter(newTableFile(f), opts)
	write := func(o *bulkOp) error {
		if o.delete {
			return t.Delete(w.key(o))
		}
		return t.Set(w.key(o), w.value(o))
	}
	// The merge gives a key's changes oldest first: each is written
	// once the next key shows it was the key's last.
	var last *bulkOp
	for o := range w.merged(runs) {
		if last != nil && !bytes.Equal(w.key(last), w.key(o)) {
			if err := write(last); err != nil {
				return errors.Join(err, t.Close())
			}
		}
		last = o
	}
	if last != nil {
		if err := write(last); err != nil {
			return errors.Join(err, t.Close())
		}
	}
	return t.Close()
}

// tableFile is the file a flush writes a table into, in writes of
// tableFileBuffer bytes: Pebble's own (objstorageprovider.NewFileWritable)
// buffers 4 KiB, one system call for each of the table's blocks.
type tableFile struct {
	f  vfs.File
	bw *bufio.Writer
}

// tableFileBuffer is the size of a table file's writes.
const tableFileBuffer = 1 << 20

var _ objstorage.Writable = (*tableFile)(nil)

func newTableFile(f vfs.File) *tableFile {
	return &tableFile{f: f, bw: bufio.NewWriterSize(f, tableFileBuffer)}
}

// Write implements objstorage.Writable.
func (t *tableFile) Write(p []byte) error {
	_, err := t.bw.Write(p)
	return err
}

// Finish implements objstorage.Writable: the table is written and synced.
func (t *tableFile) Finish() error {
	err := t.bw.Flush()
	if err == nil {
		err = t.f.Sync()
	}
	return errors.Join(err, t.f.Close())
}

// Abort implements objstorage.Writable.
func (t *tableFile) Abort() { _ = t.f.Close() }

// compare orders changes by key, and a key's changes oldest first.
func (w *bulkWrites) compare(a, b *bulkOp) int {
	if c := w.compareKeys(a, b); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

// compareKeys orders changes by key alone.
func (w *bulkWrites) compareKeys(a, b *bulkOp) int {
	if c := cmp.Compare(a.prefix, b.prefix); c != 0 {
		return c
	}
	return bytes.Compare(w.key(a), w.key(b))
}

// sortRuns sorts each run, concurrently.
func (w *bulkWrites) sortRuns() {
	next := make(chan []bulkOp, len(w.runs))
	for _, r := range w.runs {
		next <- r
	}
	close(next)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(w.runs)) {
		wg.Go(func() {
			for r := range next {
				slices.SortFunc(r, func(a, b bulkOp) int { return w.compare(&a, &b) })
			}
		})
	}
	wg.Wait()
}

// split cuts the sorted runs into n ranges of keys, about equal, between
// keys sampled from the runs: range i holds, of every run, the changes
// from the i-th boundary up to the next, so every change of a key falls
// in one range.
func (w *bulkWrites) split(n int) [][][]bulkOp {
	var samples []*bulkOp
	for _, r := range w.runs {
		for i := 1; i < n; i++ {
			if j := len(r) * i / n; j < len(r) {
				samples = append(samples, &r[j])
			}
		}
	}
	slices.SortFunc(samples, w.compareKeys)
	var bounds []*bulkOp
	for i := 1; i < n && len(samples) > 0; i++ {
		bounds = append(bounds, samples[len(samples)*i/n])
	}
	ranges := make([][][]bulkOp, len(bounds)+1)
	for _, r := range w.runs {
		from := 0
		for i, b := range bounds {
			to, _ := slices.BinarySearchFunc(r, b, func(o bulkOp, b *bulkOp) int { return w.compareKeys(&o, b) })
			ranges[i] = append(ranges[i], r[from:to])
			from = to
		}
		ranges[len(bounds)] = append(ranges[len(bounds)], r[from:])
	}
	return ranges
}

// merged yields every change of runs, each sorted, in compare's order.
func (w *bulkWrites) merged(runs [][]bulkOp) iter.Seq[*bulkOp] {
	return func(yield func(*bulkOp) bool) {
		h := &runHeap{w: w}
		for _, r := range runs {
			if len(r) > 0 {
				h.runs = append(h.runs, r)
			}
		}
		heap.Init(h)
		for len(h.runs) > 0 {
			first := &h.runs[0]
			if !yield(&(*first)[0]) {
				return
			}
			if *first = (*first)[1:]; len(*first) == 0 {
				heap.Pop(h)
			} else {
				heap.Fix(h, 0)
			}
		}
	}
}

// runHeap orders sorted runs by their first change (container/heap).
type runHeap struct {
	w    *bulkWrites
	runs [][]bulkOp
}

func (h *runHeap) Len() int           { return len(h.runs) }
func (h *runHeap) Less(i, j int) bool { return h.w.compare(&h.runs[i][0], &h.runs[j][0]) < 0 }
func (h *runHeap) Swap(i, j int)      { h.runs[i], h.runs[j] = h.runs[j], h.runs[i] }
func (h *runHeap) Push(x any)         { h.runs = append(h.runs, x.([]bulkOp)) }
func (h *runHeap) Pop() any {
	last := h.runs[len(h.runs)-1]
	h.runs = h.runs[:len(h.runs)-1]
	return last
}

// removeTables removes the tables at paths, which may not exist.
func removeTables(paths []string) error {
	var errs []error
	for _, p := range paths {
		errs = append(errs, removeIfPresent(p))
	}
	return errors.Join(errs...)
}

// removeIfPresent removes path, which may not exist.
func removeIfPresent(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
