package blockstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/cockroachdb/pebble"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/internal/fsutil"
	"github.com/utxostore/utxostore/internal/setting"
)

// maxInt is the largest slice length.
const maxInt = int(^uint(0) >> 1)

// Options configures a Store.
type Options struct {
	// Magic is the network's disk magic (chain.Network.DiskMagic), written
	// before every block.
	Magic chain.Magic
	// Retention is how many of the newest blocks are kept; 0 keeps all.
	Retention uint32
	// SegmentBytes is the size at which a new segment file is started
	// (default DefaultSegmentBytes).
	SegmentBytes int64
	// NoSync skips the fsync of every block (bulk import).
	NoSync bool
}

// DefaultSegmentBytes is Bitcoin Core's blk*.dat size.
const DefaultSegmentBytes = 128 << 20

// Errors returned by the Store.
var (
	ErrClosed  = errors.New("blockstore: closed")
	ErrNotNext = errors.New("blockstore: block is not the next one")
)

// Store is the block store of one directory.
type Store struct {
	dir  string
	opts Options

	mu      sync.RWMutex
	loc     *pebble.DB
	files   map[uint32]*os.File // open segments, by number
	seg     uint32              // the segment blocks are appended to
	segSize int64
	hasTip  bool
	tip     uint32
	low     uint32 // the lowest height held
}

// Location is where a block lies.
type Location struct {
	Hash    chainhash.Hash
	Segment uint32
	Offset  int64 // of the raw block, after the frame header
	Length  uint64
}

// Open opens (creating it if needed) the block store in dir.
func Open(dir string, opts Options) (*Store, error) {
	setting.Default(&opts.SegmentBytes, DefaultSegmentBytes)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	loc, err := pebble.Open(filepath.Join(dir, "locations"), &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		return nil, fmt.Errorf("blockstore: opening the locations: %w", err)
	}
	s := &Store{dir: dir, opts: opts, loc: loc, files: map[uint32]*os.File{}}
	// Blocks staged before a restart were never kept: their feeder sends
	// them again.
	if err := os.RemoveAll(s.incomingDir()); err != nil {
		loc.Close()
		return nil, err
	}
	if err := s.recover(); err != nil {
		loc.Close()
		return nil, err
	}
	return s, nil
}

// recover reads the tip and the lowest height, and cuts off bytes written
// after the last committed location.
func (s *Store) recover() error {
	it, err := s.loc.NewIter(&pebble.IterOptions{LowerBound: []byte{'h'}, UpperBound: []byte{'i'}})
	if err != nil {
		return err
	}
	defer it.Close()
	if !it.First() {
		if err := it.Error(); err != nil {
			return err
		}
		// No location points into the segments: a store emptied by DropFrom.
		return s.removeSegments(func(uint32) bool { return true })
	}
	s.low = binary.BigEndian.Uint32(it.Key()[1:])
	it.Last()
	s.hasTip, s.tip = true, binary.BigEndian.Uint32(it.Key()[1:])
	last, err := decodeLocation(it.Value())
	if err != nil {
		return err
	}
	// A segment past the last location's is a staged block adopted (moved
	// in) by a crash before its location was committed.
	return s.cutAfterLocked(last)
}

func (s *Store) segmentPath(n uint32) string {
	return filepath.Join(s.dir, fmt.Sprintf("blk%05d.dat", n))
}

// file returns the open segment n, opening (creating) it when needed.
func (s *Store) file(n uint32) (*os.File, error) {
	if f, ok := s.files[n]; ok {
		return f, nil
	}
	f, err := os.OpenFile(s.segmentPath(n), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	s.files[n] = f
	return f, nil
}

// Tip returns the highest height held; ok is false for an empty store.
func (s *Store) Tip() (height uint32, ok bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.tip, s.hasTip
}

// Retention is Options.Retention: how many of the newest blocks are kept
// (0: all).
func (s *Store) Retention() uint32 { return s.opts.Retention }

// Low returns the lowest height held (meaningful when Tip's ok is true).
func (s *Store) Low() uint32 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.low
}

// Put appends the raw block at height. height must be the tip's next one,
// or any height for an empty store; a height the store holds is replaced
// and the heights above it are dropped (a reorg), unless it holds this
// very block there, which is left as it is with the heights above (a
// block put again after a crash, or by a second feeder).
func (s *Store) Put(height uint32, hash chainhash.Hash, raw []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if done, err := s.checkNextLocked(height, hash); done || err != nil {
		return err
	}
	frame := chain.AppendFrameHeader(make([]byte, 0, 16+len(raw)), s.opts.Magic, uint64(len(raw)))
	if s.segSize > 0 && s.segSize+int64(len(frame)+len(raw)) > s.opts.SegmentBytes {
		s.seg, s.segSize = s.seg+1, 0
	}
	f, err := s.file(s.seg)
	if err != nil {
		return err
	}
	headerSize := int64(len(frame))
	if _, err := f.WriteAt(append(frame, raw...), s.segSize); err != nil {
		return fmt.Errorf("blockstore: writing block %d: %w", height, err)
	}
	if !s.opts.NoSync {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	return s.commitLocked(height, Location{Hash: hash, Segment: s.seg, Offset: s.segSize + headerSize, Length: uint64(len(raw))})
}

// checkNextLocked says whether a block may be put at height: done is true
// when the store holds this very block there already.
func (s *Store) checkNextLocked(height uint32, hash chainhash.Hash) (done bool, err error) {
	if s.loc == nil {
		return false, ErrClosed
	}
	if s.hasTip && (height > s.tip+1 || height < s.low) {
		return false, fmt.Errorf("%w: the store holds heights %d..%d, block %s is at %d", ErrNotNext, s.low, s.tip, hash, height)
	}
	if s.hasTip && height <= s.tip {
		l, held, err := s.locationLocked(height)
		return err == nil && held && l.Hash == hash, err
	}
	return false, nil
}

// commitLocked commits the location of the block at height, whose bytes
// are written (and synced) at l, dropping the heights it replaces and
// those the retention lets go.
func (s *Store) commitLocked(height uint32, l Location) error {
	hash := l.Hash
	b := s.loc.NewBatch()
	defer b.Close()
	if s.hasTip {
		for h := height; h <= s.tip; h++ { // replaced by a reorg
			if err := s.dropLocked(b, h); err != nil {
				return err
			}
		}
	}
	if err := b.Set(heightKey(height), encodeLocation(&l), nil); err != nil {
		return err
	}
	if err := b.Set(hashKey(&hash), binary.BigEndian.AppendUint32(nil, height), nil); err != nil {
		return err
	}
	low := s.low
	if !s.hasTip {
		low = height
	}
	if keep := s.opts.Retention; keep > 0 && height >= keep {
		for ; low <= height-keep; low++ {
			if err := s.dropLocked(b, low); err != nil {
				return err
			}
		}
	}
	if err := b.Commit(s.writeOptions()); err != nil {
		return err
	}
	s.seg, s.segSize = l.Segment, l.Offset+int64(l.Length)
	s.hasTip, s.tip, s.low = true, height, low
	return s.removeSegmentsBelowLocked()
}

// DropFrom forgets the blocks at height and above, as a disconnection
// does: their locations go in one durable commit (unless Options.NoSync),
// then their bytes, which end the segments, are cut off, as a reopened
// store cuts bytes past its last location. So a block put again after a
// rollback (a crash between keeping it and storing it) follows the block
// below it in the segment, and the segments stay a chain a block-file
// reader takes in order; a block replaced by Put still leaves its bytes
// in its segment until it is pruned. Dropping from at or below the lowest
// height held empties the store, which then takes a block at any height
// again.
func (s *Store) DropFrom(height uint32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loc == nil {
		return ErrClosed
	}
	if !s.hasTip || height > s.tip {
		return nil
	}
	b := s.loc.NewBatch()
	defer b.Close()
	for h := max(height, s.low); h <= s.tip; h++ {
		if err := s.dropLocked(b, h); err != nil {
			return err
		}
	}
	if err := b.Commit(s.writeOptions()); err != nil {
		return fmt.Errorf("blockstore: dropping the blocks from height %d: %w", height, err)
	}
	if height <= s.low {
		s.hasTip, s.tip, s.low = false, 0, 0
		s.segSize = 0
		return s.removeSegments(func(uint32) bool { return true })
	}
	s.tip = height - 1
	l, ok, err := s.locationLocked(s.tip)
	if err != nil || !ok {
		return err
	}
	return s.cutAfterLocked(l)
}

// cutAfterLocked makes the bytes of the block at l the last of the
// segments: the segments after its own go, and its own is cut after it.
func (s *Store) cutAfterLocked(l Location) error {
	s.seg, s.segSize = l.Segment, l.Offset+int64(l.Length)
	if err := s.removeSegments(func(n uint32) bool { return n > l.Segment }); err != nil {
		return err
	}
	f, err := s.file(s.seg)
	if err != nil {
		return err
	}
	if err := f.Truncate(s.segSize); err != nil {
		return fmt.Errorf("blockstore: cutting segment %d after block %d: %w", s.seg, s.tip, err)
	}
	return nil
}

// writeOptions are the location commits' sync setting.
func (s *Store) writeOptions() *pebble.WriteOptions {
	if s.opts.NoSync {
		return pebble.NoSync
	}
	return pebble.Sync
}

// dropLocked deletes the locations of height, if held, in b.
func (s *Store) dropLocked(b *pebble.Batch, height uint32) error {
	l, ok, err := s.locationLocked(height)
	if err != nil || !ok {
		return err
	}
	if err := b.Delete(hashKey(&l.Hash), nil); err != nil {
		return err
	}
	return b.Delete(heightKey(height), nil)
}

// removeSegmentsBelowLocked deletes the segment files that hold no block
// of the window any more.
func (s *Store) removeSegmentsBelowLocked() error {
	l, ok, err := s.locationLocked(s.low)
	if err != nil || !ok {
		return err
	}
	return s.removeSegments(func(n uint32) bool { return n < l.Segment })
}

// removeSegments deletes the segment files whose number doomed picks.
func (s *Store) removeSegments(doomed func(n uint32) bool) error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		var n uint32
		if _, err := fmt.Sscanf(e.Name(), "blk%05d.dat", &n); err != nil || !doomed(n) {
			continue
		}
		if f, ok := s.files[n]; ok {
			f.Close()
			delete(s.files, n)
		}
		if err := os.Remove(filepath.Join(s.dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// Location returns where the block at height lies; ok is false when the
// store does not hold it (never stored, or pruned).
func (s *Store) Location(height uint32) (l Location, ok bool, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.loc == nil {
		return Location{}, false, ErrClosed
	}
	return s.locationLocked(height)
}

func (s *Store) locationLocked(height uint32) (Location, bool, error) {
	v, closer, err := s.loc.Get(heightKey(height))
	if errors.Is(err, pebble.ErrNotFound) {
		return Location{}, false, nil
	}
	if err != nil {
		return Location{}, false, err
	}
	defer closer.Close()
	l, err := decodeLocation(v)
	return l, err == nil, err
}

// HeightOf returns the height of the block with hash; ok is false when
// the store does not hold it.
func (s *Store) HeightOf(hash chainhash.Hash) (height uint32, ok bool, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.loc == nil {
		return 0, false, ErrClosed
	}
	v, closer, err := s.loc.Get(hashKey(&hash))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer closer.Close()
	if len(v) != 4 {
		return 0, false, fmt.Errorf("blockstore: height of %s has %d bytes", hash, len(v))
	}
	return binary.BigEndian.Uint32(v), true, nil
}

// Block returns the raw block at height; ok is false when the store does
// not hold it.
func (s *Store) Block(height uint32) (raw []byte, hash chainhash.Hash, ok bool, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.loc == nil {
		return nil, hash, false, ErrClosed
	}
	l, ok, err := s.locationLocked(height)
	if err != nil || !ok {
		return nil, hash, false, err
	}
	f, ok := s.files[l.Segment]
	if !ok {
		// Only writers add to the map; a reader opens its own handle.
		if f, err = os.Open(s.segmentPath(l.Segment)); err != nil {
			return nil, hash, false, err
		}
		defer f.Close()
	}
	if l.Length > uint64(maxInt) {
		return nil, hash, false, fmt.Errorf("blockstore: block %d has %d bytes, more than this machine can hold in memory: read it with OpenBlock", height, l.Length)
	}
	raw = make([]byte, l.Length)
	if _, err := f.ReadAt(raw, l.Offset); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, hash, false, fmt.Errorf("blockstore: reading block %d from %s: %w", height, s.segmentPath(l.Segment), err)
	}
	return raw, l.Hash, true, nil
}

// DiskBytes is what the store occupies: the segments and the locations.
func (s *Store) DiskBytes() (int64, error) {
	var total int64
	err := filepath.WalkDir(s.dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			total += info.Size()
		}
		return err
	})
	return total, err
}

// Close closes the segments and the locations.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loc == nil {
		return nil
	}
	var errs []error
	for _, f := range s.files {
		errs = append(errs, f.Close())
	}
	errs = append(errs, s.loc.Close())
	s.loc, s.files = nil, nil
	return errors.Join(errs...)
}

func heightKey(h uint32) []byte { return binary.BigEndian.AppendUint32([]byte{'h'}, h) }

func hashKey(h *chainhash.Hash) []byte { return append([]byte{'x'}, h[:]...) }

// encodeLocation writes the length in 4 bytes below 4 GiB (the form of
// every location before blocks that large were kept), in 8 from there.
func encodeLocation(l *Location) []byte {
	b := append(make([]byte, 0, 52), l.Hash[:]...)
	b = binary.BigEndian.AppendUint32(b, l.Segment)
	b = binary.BigEndian.AppendUint64(b, uint64(l.Offset))
	if l.Length <= math.MaxUint32 {
		return binary.BigEndian.AppendUint32(b, uint32(l.Length))
	}
	return binary.BigEndian.AppendUint64(b, l.Length)
}

func decodeLocation(v []byte) (Location, error) {
	if len(v) != 48 && len(v) != 52 {
		return Location{}, fmt.Errorf("blockstore: a location has %d bytes, want 48 or 52", len(v))
	}
	var l Location
	copy(l.Hash[:], v)
	l.Segment = binary.BigEndian.Uint32(v[32:])
	l.Offset = int64(binary.BigEndian.Uint64(v[36:]))
	if len(v) == 48 {
		l.Length = uint64(binary.BigEndian.Uint32(v[44:]))
	} else {
		l.Length = binary.BigEndian.Uint64(v[44:])
	}
	return l, nil
}

// quietLogger keeps Pebble's informational chatter (log replay on every
// open) out of the daemon's output; fatal errors still go to Pebble's.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	pebble.DefaultLogger.Fatalf(format, args...)
}

// CopyTo copies the store, as it stands, into the new directory dir while
// it serves reads: the segments' bytes and a pebble checkpoint of the
// locations, taken while no block is put or dropped. Blocks being staged
// are left out: no location names them.
func (s *Store) CopyTo(dir string) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.loc == nil {
		return ErrClosed
	}
	locations := filepath.Join(s.dir, "locations")
	err := fsutil.CopyTree(s.dir, dir, func(rel string, _ fs.DirEntry) bool {
		path := filepath.Join(s.dir, rel)
		return path == locations || path == s.incomingDir()
	})
	if err != nil {
		return fmt.Errorf("blockstore: %w", err)
	}
	if err := s.loc.Checkpoint(filepath.Join(dir, "locations"), pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("blockstore: copying the locations to %s: %w", dir, err)
	}
	return nil
}
