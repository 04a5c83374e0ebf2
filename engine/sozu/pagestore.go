package sozu

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/utxostore/utxostore/engine"
)

// pageStore holds a shard's buckets in one file of 4 KiB pages.
//
// The unit of storage is a run: one or more neighbouring buckets of a
// layer (within a span of runSpan, several children ranges: the paper's
// ReadBucketRange/WriteBucketRange unit, widened) encoded together on as
// few pages as they need. Sparse neighbours share a page, so a bucket
// holding one entry does not cost a page of its own, and a spill that
// feeds several sparse children writes one page, not one per child; a
// bucket that fills a page gets its own run.
//
// Pages are copy-on-write with respect to the last checkpoint: a run is
// never rewritten over a page the checkpoint references, so after a crash
// the checkpoint's directory still describes intact pages and the log
// replays on top of them. Pages allocated since the checkpoint are
// overwritten freely (the checkpoint does not know them); pages the
// checkpoint references are only recycled once the next checkpoint is
// durable.
type pageStore struct {
	f    *os.File
	path string
	// dir maps every non-empty bucket to its run. Empty buckets have no
	// entry and no pages: lazy allocation costs no disk.
	dir map[bucketAddr]runID
	// sparse lists, per span (keyed by its first bucket), the runs that
	// fill at most half a page: the candidates to share a page with a
	// small bucket written next to them, found without probing every
	// bucket of the span.
	sparse map[bucketAddr][]runID
	// arena holds the runs dir and sparse name.
	arena  runArena
	npages uint32
	free   []uint32
	// fresh marks, by page number, the pages allocated since the last
	// checkpoint.
	fresh []bool
	// retired holds pages the last checkpoint references but the current
	// state no longer uses.
	retired []uint32

	// summaries[layer] holds the summaries of the layer's buckets as
	// stored, for the layers summarize chose (nil for the others).
	summaries []*layerSummaries

	pageReads, pageWrites uint64
	// layerWrites splits pageWrites by layer (at most 64: a layer takes
	// at least one hash bit).
	layerWrites [64]uint64
	// pageBuf, encodeBuf and streamBuf are reused by every read and write:
	// the store belongs to one shard goroutine, and a bucket never aliases
	// them.
	pageBuf, encodeBuf, streamBuf []byte
}

// run is a set of neighbouring buckets stored together. Its stream is
//
//	uvarint member count
//	per member: uvarint bucket index, uvarint encoded length
//	the members' encoded buckets, in the same order
//
// cut into pages; every page names the run's layer and first member.
type run struct {
	id    runID
	layer uint8
	size  int // bytes of the stream
	// The common run, one bucket on one page, keeps its member and page
	// in member and page; other runs have manyMembers and manyPages
	// (setMembers, setPages). Ten million records make about a million
	// runs, and the common one then holds no pointer for the garbage
	// collector to follow.
	member      [1]uint64
	page        [1]uint32
	manyMembers []uint64
	manyPages   []uint32
}

// members are the indexes of the run's buckets, ascending.
func (r *run) members() []uint64 {
	if r.manyMembers != nil {
		return r.manyMembers
	}
	return r.member[:]
}

// pages are the run's pages, in stream order.
func (r *run) pages() []uint32 {
	if r.manyPages != nil {
		return r.manyPages
	}
	return r.page[:]
}

// setMembers gives r room for n members.
func (r *run) setMembers(n int) {
	r.manyMembers = nil
	if n != 1 {
		r.manyMembers = make([]uint64, n)
	}
}

// setPages gives r room for n pages.
func (r *run) setPages(n int) {
	r.manyPages = nil
	if n != 1 {
		r.manyPages = make([]uint32, n)
	}
}

// runID names a run in its store's arena; 0 names none.
type runID uint32

// runArena holds a store's runs in chunks that never move, so a *run
// stays valid until its run is released, and the directory maps buckets
// to ids: a map without pointers, which the garbage collector need not
// scan (a map of a million *run would be a million pointers to follow
// at every cycle).
type runArena struct {
	chunks []*[runChunk]run
	used   runID // ids handed out, counting the unused 0
	free   []runID
}

const runChunk = 4096

func (a *runArena) at(id runID) *run { return &a.chunks[id/runChunk][id%runChunk] }

// alloc returns a zeroed run with its id set.
func (a *runArena) alloc() *run {
	var id runID
	if n := len(a.free); n > 0 {
		id, a.free = a.free[n-1], a.free[:n-1]
	} else {
		id = max(a.used, 1)
		a.used = id + 1
		if int(id/runChunk) == len(a.chunks) {
			a.chunks = append(a.chunks, new([runChunk]run))
		}
	}
	r := a.at(id)
	r.id = id
	return r
}

// release makes r's slot reusable; r must no longer be named.
func (a *runArena) release(r *run) {
	id := r.id
	*r = run{}
	a.free = append(a.free, id)
}

// runSpan is how many neighbouring buckets may share runs: a power of two
// covering several children ranges (8 at the default fan-out), because
// the layer being filled is sparse across whole ranges (at ten million
// records a range of 8 buckets held ~3 entries, a sixth of a page).
const runSpan = 64

// sparseRun is the size up to which a run is worth merging with the
// siblings being rewritten next to it: it fills at most half a page.
const sparseRun = pagePayload / 2

func openPageStore(path string, readOnly bool) (*pageStore, error) {
	f, err := openStoreFile(path, readOnly)
	if err != nil {
		return nil, err
	}
	return &pageStore{f: f, path: path, dir: make(map[bucketAddr]runID), sparse: make(map[bucketAddr][]runID), pageBuf: make([]byte, PageSize)}, nil
}

// adopt installs the runs of a checkpoint and derives the free pages:
// every page of the file that no run references.
func (s *pageStore) adopt(runs []*run) error {
	st, err := s.f.Stat()
	if err != nil {
		return err
	}
	s.npages = uint32(st.Size() / PageSize)
	used := make([]bool, s.npages)
	s.dir = make(map[bucketAddr]runID)
	s.sparse = make(map[bucketAddr][]runID)
	s.arena = runArena{}
	for _, layer := range s.summaries {
		if layer != nil {
			layer.reset()
		}
	}
	for _, image := range runs {
		r := s.arena.alloc()
		id := r.id
		*r = *image
		r.id = id
		s.noteSparse(r)
		for _, p := range r.pages() {
			if p >= s.npages {
				return &engine.CorruptionError{Engine: "sozu", Where: s.path, Detail: fmt.Sprintf("checkpoint places %v on page %d beyond the file's %d pages", r.first(), p, s.npages)}
			}
			if used[p] {
				return &engine.CorruptionError{Engine: "sozu", Where: s.path, Detail: fmt.Sprintf("checkpoint places two runs on page %d", p)}
			}
			used[p] = true
		}
		for _, m := range r.members() {
			a := addrOf(r.layer, m)
			if s.dir[a] != 0 {
				return &engine.CorruptionError{Engine: "sozu", Where: s.path, Detail: fmt.Sprintf("checkpoint places %v in two runs", a)}
			}
			s.dir[a] = r.id
		}
	}
	s.free = s.free[:0]
	for p := int(s.npages) - 1; p >= 0; p-- {
		if !used[p] {
			s.free = append(s.free, uint32(p))
		}
	}
	return nil
}

func (r *run) first() bucketAddr { return addrOf(r.layer, r.members()[0]) }

// span is the address of the first bucket of the span holding r.
func (r *run) span() bucketAddr { return addrOf(r.layer, r.members()[0]&^(runSpan-1)) }

func (s *pageStore) noteSparse(r *run) {
	if r.size <= sparseRun {
		s.sparse[r.span()] = append(s.sparse[r.span()], r.id)
	}
}

func (s *pageStore) forgetSparse(r *run) {
	if r.size > sparseRun {
		return
	}
	span := r.span()
	if list := slices.DeleteFunc(s.sparse[span], func(id runID) bool { return id == r.id }); len(list) > 0 {
		s.sparse[span] = list
	} else {
		delete(s.sparse, span)
	}
}

// runs calls fn once for every run.
func (s *pageStore) runs(fn func(r *run) error) error {
	for a, id := range s.dir {
		if r := s.arena.at(id); a.index() == r.members()[0] {
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// livePages counts the pages the runs take.
func (s *pageStore) livePages() int {
	n := 0
	s.runs(func(r *run) error { n += len(r.pages()); return nil })
	return n
}

// runAt is the run holding the bucket at addr, nil when it has none.
func (s *pageStore) runAt(addr bucketAddr) *run {
	if id := s.dir[addr]; id != 0 {
		return s.arena.at(id)
	}
	return nil
}

// read loads a bucket; a bucket without a run is empty with no children.
// The decoded entries' values alias a stream allocated here for the run.
func (s *pageStore) read(addr bucketAddr) (*bucket, error) {
	r := s.runAt(addr)
	if r == nil {
		return &bucket{}, nil
	}
	spans, err := s.readRun(r)
	if err != nil {
		return nil, err
	}
	i, _ := slices.BinarySearch(r.members(), addr.index())
	return s.decodeMember(r, spans, i)
}

// decodeMember decodes member k of run r from the spans readRun returned.
func (s *pageStore) decodeMember(r *run, spans [][]byte, k int) (*bucket, error) {
	addr := addrOf(r.layer, r.members()[k])
	b, err := decodeBucket(spans[k])
	if err != nil {
		return nil, s.corrupt(r.pages()[0], addr, err)
	}
	s.noteSummary(addr, b)
	return b, nil
}

// readRun reads a run's pages and returns each member's encoded bucket.
func (s *pageStore) readRun(r *run) ([][]byte, error) {
	// The decoded buckets alias the stream: allocate what the run holds,
	// not whole pages (a sparse run fills a fraction of one).
	stream := make([]byte, 0, r.size)
	first := r.first()
	pages := r.pages()
	for i, p := range pages {
		s.pageReads++
		if _, err := s.f.ReadAt(s.pageBuf, int64(p)*PageSize); err != nil {
			return nil, fmt.Errorf("sozu: reading %v from page %d: %w", first, p, err)
		}
		payload, err := checkPage(s.pageBuf, first, i, len(pages))
		if err != nil {
			return nil, s.corrupt(p, first, err)
		}
		stream = append(stream, payload...)
	}
	spans, err := splitRun(stream, r.members())
	if err != nil {
		return nil, s.corrupt(pages[0], first, err)
	}
	return spans, nil
}

// splitRun cuts a run's stream into its members' encoded buckets, checking
// that it holds exactly the members the directory expects.
func splitRun(stream []byte, members []uint64) ([][]byte, error) {
	n, rest, err := readUvarint(stream)
	if err != nil {
		return nil, err
	}
	if n != uint64(len(members)) {
		return nil, fmt.Errorf("run holds %d buckets, the directory %d", n, len(members))
	}
	if n > runSpan {
		return nil, fmt.Errorf("run holds %d buckets, more than a span's %d", n, runSpan)
	}
	// Their lengths fit on the stack: a run lies in one span.
	var stack [runSpan]uint64
	lengths := stack[:n]
	for i := range lengths {
		var index uint64
		if index, rest, err = readUvarint(rest); err != nil {
			return nil, err
		}
		if index != members[i] {
			return nil, fmt.Errorf("run holds bucket %d where the directory expects %d", index, members[i])
		}
		if lengths[i], rest, err = readUvarint(rest); err != nil {
			return nil, err
		}
	}
	spans := make([][]byte, n)
	for i, l := range lengths {
		if l > uint64(len(rest)) {
			return nil, errors.New("run cut short")
		}
		spans[i], rest = rest[:l:l], rest[l:]
	}
	if len(rest) != 0 {
		return nil, errors.New("trailing bytes after the last bucket of a run")
	}
	return spans, nil
}

func (s *pageStore) corrupt(page uint32, addr bucketAddr, err error) error {
	return &engine.CorruptionError{Engine: "sozu", Where: fmt.Sprintf("%s page %d (%v)", s.path, page, addr), Detail: err.Error()}
}

// writeRange stores the changed buckets of the span of layer that starts
// at bucket first. Their runs are rewritten and, when a changed
// bucket is small, joined by the span's other sparse runs; everything is
// packed in index order onto as few pages as it takes, and a run left
// exactly as it was is not rewritten. current returns a bucket's state
// when the caller holds it in memory and nil otherwise (it is then read
// from its run).
func (s *pageStore) writeRange(layer uint8, first uint64, changed []uint64, current func(uint64) *bucket) error {
	// A member is in memory (b) or keeps the bytes its run stored (raw).
	type member struct {
		index   uint64
		b       *bucket
		raw     []byte
		changed bool
	}
	var olds []*run
	takeApart := func(r *run) {
		if r != nil && !slices.Contains(olds, r) {
			olds = append(olds, r)
		}
	}
	members := make([]member, 0, len(changed))
	small := false
	for _, i := range changed {
		b, r := current(i), s.runAt(addrOf(layer, i))
		takeApart(r)
		members = append(members, member{index: i, b: b, changed: true})
		small = small || b.size <= sparseRun || (r != nil && r.size <= sparseRun)
	}
	// Only a small bucket gains from sharing a page with sparse
	// neighbours.
	if small {
		for _, id := range s.sparse[addrOf(layer, first)] {
			takeApart(s.arena.at(id))
		}
	}
	for _, r := range olds {
		var spans [][]byte
		for k, m := range r.members() {
			if slices.ContainsFunc(members, func(x member) bool { return x.index == m }) {
				continue
			}
			if b := current(m); b != nil {
				members = append(members, member{index: m, b: b})
				continue
			}
			if spans == nil {
				var err error
				if spans, err = s.readRun(r); err != nil {
					return err
				}
			}
			members = append(members, member{index: m, raw: spans[k]})
		}
	}
	members = slices.DeleteFunc(members, func(x member) bool {
		if x.b != nil && x.b.empty() {
			// Not stored: it reads as empty, without children.
			delete(s.dir, addrOf(layer, x.index))
			s.noteSummary(addrOf(layer, x.index), x.b)
			return true
		}
		return false
	})
	slices.SortFunc(members, func(x, y member) int { return cmp.Compare(x.index, y.index) })
	indexes := make([]uint64, len(members))
	bounds := make([]int, len(members)+1)
	scratch := s.encodeBuf[:0]
	for k, m := range members {
		indexes[k] = m.index
		if m.b != nil {
			scratch = m.b.encode(scratch)
		}
		bounds[k+1] = len(scratch)
	}
	s.encodeBuf = scratch
	encoded := make([][]byte, len(members))
	for k, m := range members {
		if m.b != nil {
			encoded[k] = scratch[bounds[k]:bounds[k+1]]
		} else {
			encoded[k] = m.raw
		}
	}

	// Pack in index order: a run closes when the next member would push
	// it past a page. A member larger than a page gets a run of its own.
	var kept []*run
	from, size := 0, runCountMax
	place := func(to int) error {
		if from == to {
			return nil
		}
		pack := indexes[from:to:to]
		r := s.runAt(addrOf(layer, pack[0]))
		if r != nil && slices.Contains(olds, r) && slices.Equal(r.members(), pack) &&
			!slices.ContainsFunc(members[from:to], func(x member) bool { return x.changed }) {
			kept = append(kept, r)
		} else if err := s.writeRun(layer, pack, encoded[from:to]); err != nil {
			return err
		}
		from, size = to, runCountMax
		return nil
	}
	for k := range members {
		cost := uvarintLen(indexes[k]) + uvarintLen(uint64(len(encoded[k]))) + len(encoded[k])
		if k > from && size+cost > pagePayload {
			if err := place(k); err != nil {
				return err
			}
		}
		size += cost
	}
	if err := place(len(members)); err != nil {
		return err
	}
	for _, m := range members {
		if m.b != nil {
			s.noteSummary(addrOf(layer, m.index), m.b)
		}
	}
	for _, r := range olds {
		if !slices.Contains(kept, r) {
			s.forgetSparse(r)
			s.release(r.pages())
			s.arena.release(r)
		}
	}
	return nil
}

// runCountMax bounds the member count at the head of a run's stream.
const runCountMax = 3

// writeRun writes members (encoded) as one run on newly allocated pages.
func (s *pageStore) writeRun(layer uint8, members []uint64, encoded [][]byte) error {
	stream := binary.AppendUvarint(s.streamBuf[:0], uint64(len(members)))
	for k, m := range members {
		stream = binary.AppendUvarint(stream, m)
		stream = binary.AppendUvarint(stream, uint64(len(encoded[k])))
	}
	for _, e := range encoded {
		stream = append(stream, e...)
	}
	s.streamBuf = stream
	r := s.arena.alloc()
	r.layer, r.size = layer, len(stream)
	r.setMembers(len(members))
	copy(r.members(), members)
	r.setPages(pageCount(len(stream)))
	first := r.first()
	pages := r.pages()
	for i := range pages {
		encodePage(s.pageBuf, first, stream, i, len(pages))
		n := s.allocate()
		pages[i] = n
		s.pageWrites++
		s.layerWrites[layer]++
		if _, err := s.f.WriteAt(s.pageBuf, int64(n)*PageSize); err != nil {
			return fmt.Errorf("sozu: writing %v to page %d: %w", first, n, err)
		}
	}
	for _, m := range members {
		s.dir[addrOf(layer, m)] = r.id
	}
	s.noteSparse(r)
	return nil
}

func (s *pageStore) allocate() uint32 {
	var p uint32
	if n := len(s.free); n > 0 {
		p = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		p = s.npages
		s.npages++
	}
	if n := int(p) + 1; n > len(s.fresh) {
		// Past len nothing was ever set: the slice only grows.
		s.fresh = slices.Grow(s.fresh, n-len(s.fresh))[:n]
	}
	s.fresh[p] = true
	return p
}

func (s *pageStore) release(pages []uint32) {
	for _, p := range pages {
		if int(p) < len(s.fresh) && s.fresh[p] {
			s.fresh[p] = false
			s.free = append(s.free, p)
		} else {
			s.retired = append(s.retired, p)
		}
	}
}

// checkpointed is called once a checkpoint referencing the current
// directory is durable: retired pages become reusable, and every page is
// now one the checkpoint knows.
func (s *pageStore) checkpointed() {
	s.free = append(s.free, s.retired...)
	s.retired = s.retired[:0]
	clear(s.fresh)
}

func (s *pageStore) sync() error { return s.f.Sync() }

func (s *pageStore) close() error { return s.f.Close() }
