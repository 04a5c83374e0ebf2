package index

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// writes is where connecting and disconnecting a block put their changes:
// a Pebble batch for one block, bulkWrites for a bulk import's blocks.
type writes interface {
	Set(key, value []byte, _ *pebble.WriteOptions) error
	Delete(key []byte, _ *pebble.WriteOptions) error
}

// bulkWrites gathers the changes of a bulk import's blocks and hands them
// to Pebble as one sorted table (ingest), not as a batch. A batch of
// hundreds of megabytes is written to Pebble's log, sorted by Pebble with
// a comparison that decodes both keys from the batch, and then written
// again as a table when its memtable is flushed; the table is written once,
// after a sort of fixed-size entries that mostly compares 8-byte
// prefixes. On the 1M benchmark with --index that takes a quarter off the
// index's time and halves its disk (BENCHMARKS.md).
type bulkWrites struct {
	// chunks hold the keys and values, each change's key then value in
	// one chunk: appending never copies what is already held.
	chunks [][]byte
	ops    []bulkOp
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

// bulkChunkSize is the size of a chunk (a larger change gets one of its
// own).
const bulkChunkSize = 4 << 20

// ingestFile is the name, in the index's directory, of the table a bulk
// flush writes before Pebble takes it in (and removes it). A crash can
// leave it behind; Open removes it.
const ingestFile = "bulk-flush.sst"

func (w *bulkWrites) add(key, value []byte, del bool) {
	n := len(key) + len(value)
	if len(w.chunks) == 0 || cap(w.chunks[len(w.chunks)-1])-len(w.chunks[len(w.chunks)-1]) < n {
		w.chunks = append(w.chunks, make([]byte, 0, max(bulkChunkSize, n)))
	}
	c := &w.chunks[len(w.chunks)-1]
	off := len(*c)
	*c = append(append(*c, key...), value...)
	var prefix [8]byte
	copy(prefix[:], key)
	w.ops = append(w.ops, bulkOp{prefix: binary.BigEndian.Uint64(prefix[:]),
		chunk: uint32(len(w.chunks) - 1), off: uint32(off), keyLen: uint32(len(key)), valLen: uint32(len(value)),
		seq: uint32(len(w.ops)), delete: del})
	w.bytes += n
}

// Set records that key holds value.
func (w *bulkWrites) Set(key, value []byte, _ *pebble.WriteOptions) error {
	w.add(key, value, false)
	return nil
}

// Delete records that key is deleted.
func (w *bulkWrites) Delete(key []byte, _ *pebble.WriteOptions) error {
	w.add(key, nil, true)
	return nil
}

// Len is the bytes of the keys and values recorded.
func (w *bulkWrites) Len() int { return w.bytes }

func (w *bulkWrites) key(o *bulkOp) []byte {
	return w.chunks[o.chunk][o.off : o.off+o.keyLen]
}

func (w *bulkWrites) value(o *bulkOp) []byte {
	start := o.off + o.keyLen
	return w.chunks[o.chunk][start : start+o.valLen]
}

// reset forgets every change.
func (w *bulkWrites) reset() { *w = bulkWrites{} }

// ingest writes the changes into one table (writeTable) and has Pebble
// take it in: atomically, and durable when it returns, whatever
// Options.NoSync says. Reads made before it returns do not see the
// changes, as they would not see an uncommitted batch.
func (w *bulkWrites) ingest(ix *Index) error {
	if len(w.ops) == 0 {
		return nil
	}
	path := filepath.Join(ix.dir, ingestFile)
	if err := w.writeTable(ix, path); err != nil {
		return errors.Join(err, removeIfPresent(path))
	}
	if err := ix.db.Ingest([]string{path}); err != nil {
		return errors.Join(fmt.Errorf("taking in the bulk flush's table: %w", err), removeIfPresent(path))
	}
	ix.ingestedBytes += uint64(w.bytes)
	return nil
}

// writeTable sorts the changes and writes them, each key's last alone,
// into a new table at path, synced.
func (w *bulkWrites) writeTable(ix *Index, path string) error {
	slices.SortFunc(w.ops, func(a, b bulkOp) int {
		if c := cmp.Compare(a.prefix, b.prefix); c != 0 {
			return c
		}
		if c := bytes.Compare(w.key(&a), w.key(&b)); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	f, err := vfs.Default.Create(path)
	if err != nil {
		return err
	}
	opts := ix.pebbleOpts.MakeWriterOptions(0, ix.db.FormatMajorVersion().MaxTableFormat())
	t := sstable.NewWriter(objstorageprovider.NewFileWritable(f), opts)
	for i := range w.ops {
		o := &w.ops[i]
		key := w.key(o)
		if i+1 < len(w.ops) && bytes.Equal(key, w.key(&w.ops[i+1])) {
			continue // a later change of the key follows
		}
		if o.delete {
			err = t.Delete(key)
		} else {
			err = t.Set(key, w.value(o))
		}
		if err != nil {
			return errors.Join(err, t.Close())
		}
	}
	return t.Close()
}

// removeIfPresent removes path, which may not exist.
func removeIfPresent(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
