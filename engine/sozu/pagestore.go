package sozu

import (
	"fmt"
	"os"

	"github.com/utxostore/utxostore/engine"
)

// pageStore holds a shard's deep layers in one file of 4 KiB pages.
//
// Pages are copy-on-write with respect to the last checkpoint: a bucket is
// never rewritten over a page the checkpoint references, so after a crash
// the checkpoint's directory still describes intact pages and the log
// replays on top of them. Pages allocated since the checkpoint are
// overwritten freely (the checkpoint does not know them); pages the
// checkpoint references are only recycled once the next checkpoint is
// durable.
type pageStore struct {
	f    *os.File
	path string
	// dir maps every non-empty deep bucket to its pages. Empty buckets have
	// no entry and no pages: lazy allocation costs no disk.
	dir    map[bucketAddr][]uint32
	npages uint32
	free   []uint32
	// fresh holds the pages allocated since the last checkpoint.
	fresh map[uint32]struct{}
	// retired holds pages the last checkpoint references but the current
	// state no longer uses.
	retired []uint32

	pageReads, pageWrites uint64
	// pageBuf and encodeBuf are reused by every read and write: the store
	// belongs to one shard goroutine, and a bucket never aliases them.
	pageBuf, encodeBuf []byte
}

func openPageStore(path string) (*pageStore, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &pageStore{f: f, path: path, dir: make(map[bucketAddr][]uint32), fresh: make(map[uint32]struct{}), pageBuf: make([]byte, PageSize)}, nil
}

// adopt installs the directory of a checkpoint and derives the free pages:
// every page of the file that the directory does not reference.
func (s *pageStore) adopt(dir map[bucketAddr][]uint32) error {
	st, err := s.f.Stat()
	if err != nil {
		return err
	}
	s.dir = dir
	s.npages = uint32(st.Size() / PageSize)
	used := make([]bool, s.npages)
	for addr, pages := range dir {
		for _, p := range pages {
			if p >= s.npages {
				return &engine.CorruptionError{Engine: "sozu", Where: s.path, Detail: fmt.Sprintf("checkpoint places %v on page %d beyond the file's %d pages", addr, p, s.npages)}
			}
			if used[p] {
				return &engine.CorruptionError{Engine: "sozu", Where: s.path, Detail: fmt.Sprintf("checkpoint places two buckets on page %d", p)}
			}
			used[p] = true
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

// read loads a bucket; a bucket without pages is empty with no children.
// The decoded entries' values alias a stream allocated here for the bucket.
func (s *pageStore) read(addr bucketAddr) (*bucket, error) {
	pages := s.dir[addr]
	if len(pages) == 0 {
		return &bucket{}, nil
	}
	stream := make([]byte, 0, len(pages)*pagePayload)
	buf := s.pageBuf
	for i, p := range pages {
		s.pageReads++
		if _, err := s.f.ReadAt(buf, int64(p)*PageSize); err != nil {
			return nil, fmt.Errorf("sozu: reading %v from page %d: %w", addr, p, err)
		}
		payload, err := checkPage(buf, addr, i, len(pages))
		if err != nil {
			return nil, s.corrupt(p, addr, err)
		}
		stream = append(stream, payload...)
	}
	b, err := decodeBucket(stream)
	if err != nil {
		return nil, s.corrupt(pages[0], addr, err)
	}
	return b, nil
}

func (s *pageStore) corrupt(page uint32, addr bucketAddr, err error) error {
	return &engine.CorruptionError{Engine: "sozu", Where: fmt.Sprintf("%s page %d (%v)", s.path, page, addr), Detail: err.Error()}
}

// write stores a bucket on newly allocated pages and releases its old
// ones; an empty bucket gives its pages back.
func (s *pageStore) write(addr bucketAddr, b *bucket) error {
	old := s.dir[addr]
	if b.empty() {
		delete(s.dir, addr)
		s.release(old)
		return nil
	}
	s.encodeBuf = b.encode(s.encodeBuf[:0])
	count := pageCount(len(s.encodeBuf))
	placed := make([]uint32, count)
	for i := range placed {
		encodePage(s.pageBuf, addr, s.encodeBuf, i, count)
		n := s.allocate()
		placed[i] = n
		s.pageWrites++
		if _, err := s.f.WriteAt(s.pageBuf, int64(n)*PageSize); err != nil {
			return fmt.Errorf("sozu: writing %v to page %d: %w", addr, n, err)
		}
	}
	s.dir[addr] = placed
	s.release(old)
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
	s.fresh[p] = struct{}{}
	return p
}

func (s *pageStore) release(pages []uint32) {
	for _, p := range pages {
		if _, ok := s.fresh[p]; ok {
			delete(s.fresh, p)
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
