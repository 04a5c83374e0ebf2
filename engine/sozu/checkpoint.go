package sozu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	cuckoo "github.com/seiflotfy/cuckoofilter"

	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/internal/termindex"
	"github.com/utxostore/utxostore/internal/fsutil"
)

// A checkpoint is one file per shard, shard-NN.ckpt.GEN, holding what the
// shard keeps only in memory: the directory of the buckets' pages (layer 0
// included: its changed buckets are written to pages like deep ones, so a
// checkpoint writes what changed, not the whole volatile layer), the
// changes buffered for deep buckets (changes.go), the value log's length,
// the chain height, for shard 0 the store metadata, and what is derived
// from the buckets (derivedState) so that opening need not read them all.
// The file named
// CHECKPOINT says which generation is
// current; it is replaced atomically (write, fsync, rename, fsync dir)
// after every shard's file is durable, so a crash leaves either the old or
// the new generation whole. The log of generation GEN, wal.GEN (one for
// all shards), holds what happened after checkpoint GEN.
const (
	// checkpointMagic names the checkpoint format, the only one this
	// release reads and writes (checkpointFamily and a version digit).
	checkpointMagic  = checkpointFamily + "6"
	checkpointFamily = "SOZUCKP"
	manifestMagic    = "SOZUCKP2"
	manifestName     = "CHECKPOINT"
)

func checkpointPath(dir string, shard int, gen uint64) string {
	return filepath.Join(dir, fmt.Sprintf("shard-%02d.ckpt.%d", shard, gen))
}

func logPath(dir string, gen uint64) string {
	return filepath.Join(dir, fmt.Sprintf("wal.%d", gen))
}

// isCheckpointFile and isLogFile tell the files checkpointPath and
// logPath name, of any shard and generation, by their names.
func isCheckpointFile(name string) bool { return strings.Contains(name, ".ckpt.") }
func isLogFile(name string) bool        { return strings.HasPrefix(name, "wal.") }

func pagesPath(dir string, shard int) string {
	return filepath.Join(dir, fmt.Sprintf("shard-%02d.pages", shard))
}

// valueLogPath names generation gen of a shard's value log; the first
// (0) has no suffix.
func valueLogPath(dir string, shard int, gen uint64) string {
	if gen == 0 {
		return filepath.Join(dir, fmt.Sprintf("shard-%02d.vlog", shard))
	}
	return filepath.Join(dir, fmt.Sprintf("shard-%02d.vlog.%d", shard, gen))
}

// checkpointImage is the decoded content of a shard's checkpoint file.
type checkpointImage struct {
	gen      uint64
	height   uint32
	vlogSize int64
	vlogGen  uint64
	entries  int64
	meta     map[string][]byte
	runs     []*run
	pending  map[bucketAddr]*changes
	derived  *derivedState // nil when the checkpoint has none
}

// derivedState is what a table keeps in memory that its buckets determine:
// the filter, the secondary indexes, the per-layer counters and the value
// log's live bytes. A checkpoint stores it so that opening a store does
// not read every bucket to derive it (seconds per ten million records);
// the log replay then updates it like any other change.
type derivedState struct {
	filter         *cuckoo.Filter
	filterCapacity uint
	indexes        *termindex.Indexes
	layers         []layerCounters
	valuesLive     int64
}

func (t *table) encodeCheckpoint(gen uint64) []byte {
	out := []byte(checkpointMagic)
	out = binary.LittleEndian.AppendUint64(out, gen)
	// The layout decides where every key lives: a store opened with
	// another one would look for keys in the wrong buckets.
	l := t.layout
	out = append(out, byte(l.shardBits), byte(l.b0Bits), byte(l.fanoutBits), byte(l.layers))
	out = binary.LittleEndian.AppendUint32(out, t.height)
	out = binary.LittleEndian.AppendUint64(out, uint64(t.values.size))
	out = binary.LittleEndian.AppendUint64(out, t.values.gen)
	var entries int64
	for _, c := range t.layers {
		entries += c.entries
	}
	out = binary.LittleEndian.AppendUint64(out, uint64(entries))

	names := make([]string, 0, len(t.meta))
	for n := range t.meta {
		names = append(names, n)
	}
	slices.Sort(names)
	out = binary.AppendUvarint(out, uint64(len(names)))
	for _, n := range names {
		out = appendBytes(out, []byte(n))
		out = appendBytes(out, t.meta[n])
	}

	var runs []*run
	t.pages.runs(func(r *run) error { runs = append(runs, r); return nil })
	out = binary.AppendUvarint(out, uint64(len(runs)))
	for _, r := range runs {
		out = append(out, r.layer)
		out = binary.AppendUvarint(out, uint64(r.size))
		out = binary.AppendUvarint(out, uint64(len(r.members())))
		for _, m := range r.members() {
			out = binary.AppendUvarint(out, m)
		}
		out = binary.AppendUvarint(out, uint64(len(r.pages())))
		for _, p := range r.pages() {
			out = binary.AppendUvarint(out, uint64(p))
		}
	}

	// The buffered changes are kept, not applied: applying them all at a
	// block boundary would stall it for the page reads and writes the
	// buffer exists to spread out.
	out = binary.AppendUvarint(out, uint64(len(t.pending)))
	for a, c := range t.pending {
		out = append(out, a.layer())
		out = binary.AppendUvarint(out, a.index())
		out = binary.AppendUvarint(out, uint64(len(c.put.entries)))
		for i := range c.put.entries {
			out = appendEntry(out, &c.put.entries[i])
		}
		out = binary.AppendUvarint(out, uint64(len(c.removed)))
		for _, k := range c.removed {
			out = append(out, k[:]...)
		}
	}
	out = t.appendDerived(out)
	return binary.LittleEndian.AppendUint32(out, checksum(out))
}

// appendDerived encodes the table's derivedState: a flag byte, 0 when a
// stale filter (being rebuilt) leaves the state to be derived on open.
func (t *table) appendDerived(out []byte) []byte {
	if t.filter.stale {
		return append(out, 0)
	}
	out = append(out, 1, filterEncoding)
	out = binary.LittleEndian.AppendUint32(out, hashFingerprint())
	out = binary.AppendUvarint(out, uint64(t.filter.capacity))
	out = appendBytes(out, t.filter.f.Encode())
	for _, idx := range engine.Indexes {
		m := t.indexes[idx]
		out = binary.AppendUvarint(out, uint64(len(m)))
		for k, term := range m {
			out = append(out, k[:]...)
			out = binary.AppendUvarint(out, uint64(term))
		}
	}
	for _, c := range t.layers {
		out = binary.AppendUvarint(out, uint64(c.entries))
		out = binary.AppendUvarint(out, uint64(c.bytes))
		out = binary.AppendUvarint(out, uint64(c.buckets))
	}
	return binary.AppendUvarint(out, uint64(t.values.live))
}

// readDerived decodes what appendDerived wrote, for a table of layers
// layers. A filter of another encoding, or hashed otherwise than the
// filter library hashes now, leaves the whole state to be derived from
// the buckets (nil), as a stale one does.
func readDerived(r *reader, layers int) (*derivedState, error) {
	if r.byte() == 0 || r.err != nil {
		return nil, r.err
	}
	encoding, hash := r.byte(), r.u32()
	d := &derivedState{filterCapacity: uint(r.uvarint()), indexes: termindex.New()}
	encoded := r.bytes()
	if r.err != nil {
		return nil, r.err
	}
	trusted := encoding == filterEncoding && hash == hashFingerprint()
	if trusted {
		// The filter finds its buckets by masking the hash with their
		// count: a count that is not a power of two would hide keys it
		// holds.
		if buckets := len(encoded) / 4; len(encoded)%4 != 0 || buckets == 0 || buckets&(buckets-1) != 0 {
			return nil, fmt.Errorf("a filter of %d bytes: not a power of two of 4-byte buckets", len(encoded))
		}
		var err error
		if d.filter, err = cuckoo.Decode(encoded); err != nil {
			return nil, fmt.Errorf("filter: %w", err)
		}
	}
	for _, idx := range engine.Indexes {
		n := r.uvarint()
		if n > uint64(len(r.b))/engine.KeySize {
			return nil, fmt.Errorf("index %v of %d keys in %d bytes", idx, n, len(r.b))
		}
		m := make(map[engine.Key]uint32, n)
		for ; n > 0 && r.err == nil; n-- {
			k := engine.Key(r.take(engine.KeySize))
			m[k] = uint32(r.uvarint())
		}
		d.indexes[idx] = m
	}
	d.layers = make([]layerCounters, layers)
	for i := range d.layers {
		d.layers[i] = layerCounters{entries: int64(r.uvarint()), bytes: int64(r.uvarint()), buckets: int64(r.uvarint())}
	}
	d.valuesLive = int64(r.uvarint())
	if !trusted {
		return nil, r.err
	}
	return d, r.err
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// decodeCheckpoint decodes the checkpoint file at path. A checkpoint of
// another format is refused with a FormatError.
func decodeCheckpoint(path string, data []byte, l layout) (*checkpointImage, error) {
	magic := string(data[:min(len(data), len(checkpointMagic))])
	if len(magic) == len(checkpointMagic) && strings.HasPrefix(magic, checkpointFamily) && magic != checkpointMagic {
		return nil, &FormatError{Path: path, Found: magic, Want: checkpointMagic}
	}
	if len(data) < len(checkpointMagic)+32+4 || magic != checkpointMagic {
		return nil, errors.New("not a checkpoint file")
	}
	body := data[:len(data)-4]
	if checksum(body) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
		return nil, errors.New("checkpoint checksum mismatch")
	}
	r := reader{b: body[len(checkpointMagic):]}
	gen := r.u64()
	stored := layout{shardBits: int(r.byte()), b0Bits: int(r.byte()), fanoutBits: int(r.byte()), layers: int(r.byte())}
	if r.err == nil && stored != l {
		return nil, &layoutError{stored: stored, opened: l}
	}
	img := &checkpointImage{
		gen:      gen,
		height:   r.u32(),
		vlogSize: int64(r.u64()),
		meta:     make(map[string][]byte),
	}
	img.vlogGen = r.u64()
	img.entries = int64(r.u64())
	for n := r.uvarint(); n > 0 && r.err == nil; n-- {
		name := string(r.bytes())
		img.meta[name] = slices.Clone(r.bytes())
	}
	for n := r.uvarint(); n > 0 && r.err == nil; n-- {
		rn := &run{layer: r.byte(), size: int(r.uvarint())}
		rn.setMembers(int(r.uvarint() % (1 << 16)))
		members := rn.members()
		for i := range members {
			members[i] = r.uvarint()
		}
		rn.setPages(int(r.uvarint() % (1 << 16)))
		pages := rn.pages()
		for i := range pages {
			pages[i] = uint32(r.uvarint())
		}
		if r.err != nil {
			break
		}
		if len(members) == 0 || len(pages) != pageCount(rn.size) {
			return nil, fmt.Errorf("a run of %d buckets on %d pages for %d bytes", len(members), len(pages), rn.size)
		}
		for i, m := range members {
			if int(rn.layer) >= l.layers || m >= l.bucketsIn(int(rn.layer)) || (i > 0 && m <= members[i-1]) {
				return nil, fmt.Errorf("directory names layer %d bucket %d outside the layout or out of order", rn.layer, m)
			}
		}
		img.runs = append(img.runs, rn)
	}
	img.pending = make(map[bucketAddr]*changes)
	for n := r.uvarint(); n > 0 && r.err == nil; n-- {
		layer, index := r.byte(), r.uvarint()
		if r.err == nil && (layer == 0 || int(layer) >= l.layers || index >= l.bucketsIn(int(layer))) {
			return nil, fmt.Errorf("buffered changes for layer %d bucket %d, outside the deep layers", layer, index)
		}
		a := addrOf(layer, index)
		if img.pending[a] != nil {
			return nil, fmt.Errorf("buffered changes for %v twice", a)
		}
		c := newChanges()
		for m := r.uvarint(); m > 0 && r.err == nil; m-- {
			e, rest, err := decodeEntry(r.b)
			if err != nil {
				return nil, fmt.Errorf("buffered changes for %v: %w", a, err)
			}
			// The checkpoint's bytes are not kept: copy the value out.
			e.value = slices.Clone(e.value)
			r.b = rest
			c.add(e)
		}
		for m := r.uvarint(); m > 0 && r.err == nil; m-- {
			c.markRemoved(engine.Key(r.take(engine.KeySize)))
		}
		img.pending[a] = c
	}
	if r.err == nil {
		derived, err := readDerived(&r, l.layers)
		if err != nil {
			return nil, err
		}
		if derived != nil {
			var sum int64
			for _, c := range derived.layers {
				sum += c.entries
			}
			if sum != img.entries {
				return nil, fmt.Errorf("the derived counters hold %d entries, the checkpoint %d", sum, img.entries)
			}
		}
		img.derived = derived
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%d bytes after the checkpoint's last field", len(r.b))
	}
	return img, nil
}

// FormatError refuses a file of another on-disk format than the one this
// release reads and writes; the store is left as it is.
type FormatError struct {
	Path  string // the file
	Found string // the format it names
	Want  string // the format this release reads
}

func (e *FormatError) Error() string {
	by := "another program"
	if n := len(e.Want) - 1; len(e.Found) == len(e.Want) && e.Found[:n] == e.Want[:n] {
		by = "a later release"
		if e.Found < e.Want {
			by = "an earlier release"
		}
	}
	return fmt.Sprintf("sozu: %s is of format %q, written by %s; this release reads only %q: open the store with the release that wrote it, or import the chain into a new directory",
		e.Path, e.Found, by, e.Want)
}

// layoutError refuses to open a store with another layout than the one it
// was created with.
type layoutError struct{ stored, opened layout }

func (e *layoutError) Error() string {
	f := func(l layout) string {
		return fmt.Sprintf("Shards=%d Layer0Buckets=%d FanoutBits=%d Layers=%d", 1<<l.shardBits, 1<<l.b0Bits, l.fanoutBits, l.layers)
	}
	l := e.stored
	return fmt.Sprintf("sozu: the store was created with %s and cannot be opened with %s: open it with the layout it has (tuning shards=%d,b0=%d,fanout=%d,layers=%d)",
		f(e.stored), f(e.opened), 1<<l.shardBits, 1<<l.b0Bits, l.fanoutBits, l.layers)
}

// reader decodes a checkpoint, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil || n > len(r.b) {
		r.err = errors.New("checkpoint cut short")
		return make([]byte, n)
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u64() uint64 { return binary.LittleEndian.Uint64(r.take(8)) }
func (r *reader) u32() uint32 { return binary.LittleEndian.Uint32(r.take(4)) }
func (r *reader) byte() byte  { return r.take(1)[0] }

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, rest, err := readUvarint(r.b)
	if err != nil {
		r.err = err
		return 0
	}
	r.b = rest
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.err = errors.New("checkpoint cut short")
		return nil
	}
	return r.take(int(n))
}

// writeFileSync writes data to path and fsyncs it.
func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeManifest(dir string, gen uint64) error {
	data := binary.LittleEndian.AppendUint64([]byte(manifestMagic), gen)
	data = binary.LittleEndian.AppendUint32(data, checksum(data))
	tmp := filepath.Join(dir, manifestName+".tmp")
	if err := writeFileSync(tmp, data); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, manifestName)); err != nil {
		return err
	}
	return fsutil.SyncDir(dir)
}

// readManifest returns the current generation; 0 means no checkpoint yet.
func readManifest(dir string) (uint64, error) {
	path := filepath.Join(dir, manifestName)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if found := string(data[:min(len(data), len(manifestMagic))]); len(found) == len(manifestMagic) &&
		strings.HasPrefix(found, checkpointFamily) && found != manifestMagic {
		return 0, &FormatError{Path: path, Found: found, Want: manifestMagic}
	}
	if len(data) != len(manifestMagic)+12 || string(data[:len(manifestMagic)]) != manifestMagic ||
		checksum(data[:len(data)-4]) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
		return 0, &engine.CorruptionError{Engine: "sozu", Where: path, Detail: "manifest checksum mismatch"}
	}
	return binary.LittleEndian.Uint64(data[len(manifestMagic):]), nil
}

// prepareCheckpoint runs on the shard goroutine: it appends its pending
// records to the current log, writes every dirty bucket out, makes pages
// and values durable and writes checkpoint gen. Nothing of the previous
// generation is touched, so a failure or crash here leaves it whole.
func (s *shard) prepareCheckpoint(gen uint64) error {
	if _, err := s.appendRecords(); err != nil {
		return err
	}
	if s.table.valuesWorthCompacting() && s.table.values.gen != gen {
		retired, err := s.table.compactValues(valueLogPath(s.dir, s.id, gen), gen)
		if err != nil {
			return s.fail(err)
		}
		s.retiredValueLogs = append(s.retiredValueLogs, retired)
	}
	if err := s.table.flushLayer0(); err != nil {
		return s.fail(err)
	}
	if err := s.table.flush(); err != nil {
		return s.fail(err)
	}
	if err := s.table.pages.sync(); err != nil {
		return s.fail(err)
	}
	if err := s.table.values.sync(); err != nil {
		return s.fail(err)
	}
	image := s.table.encodeCheckpoint(gen)
	if err := writeFileSync(checkpointPath(s.dir, s.id, gen), image); err != nil {
		return err
	}
	s.checkpointBytes += int64(len(image))
	return nil
}

// finishCheckpoint switches to the new generation once the manifest names
// it, and deletes the shard's old checkpoint and the value logs compacted
// since the previous generation became current.
func (s *shard) finishCheckpoint(prev uint64, next *writeAheadLog) {
	// The checkpoint holds every record the old log did: none is owed,
	// and the old log's offsets mean nothing in the new one.
	s.log, s.owed = next, 0
	os.Remove(checkpointPath(s.dir, s.id, prev))
	for _, path := range s.retiredValueLogs {
		os.Remove(path)
	}
	s.retiredValueLogs = nil
	s.table.pages.checkpointed()
}
