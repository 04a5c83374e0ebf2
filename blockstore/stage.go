package blockstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/internal/fsutil"
)

// Staged is a block written to the block store's directory but not kept
// yet: a block too large to hold in memory goes from its source (a peer's
// socket) to disk once, is checked from there, and is then kept where it
// lies by Adopt, or dropped by Discard. It is a blk*.dat file of one
// block, in the segments' framing, so adopting it is a rename.
type Staged struct {
	path       string
	hash       chainhash.Hash
	size       int64
	headerSize int64
}

// Hash is the block's hash, as the caller named it to Stage.
func (st *Staged) Hash() chainhash.Hash { return st.hash }

// Size is the block's size in bytes.
func (st *Staged) Size() int64 { return st.size }

// incomingDir holds the staged blocks; Open empties it.
func (s *Store) incomingDir() string { return filepath.Join(s.dir, "incoming") }

// Stage writes the size bytes of the block with hash that r yields to a
// file of its own. An error from r (a peer that stops sending, a checksum
// its caller found wrong) leaves nothing behind. Staging takes no lock:
// blocks may be staged while others are put or adopted.
func (s *Store) Stage(r io.Reader, size int64, hash chainhash.Hash) (*Staged, error) {
	if err := os.MkdirAll(s.incomingDir(), 0o755); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(s.incomingDir(), hash.String()+"-*.dat")
	if err != nil {
		return nil, err
	}
	st := &Staged{path: f.Name(), hash: hash, size: size}
	header := chain.AppendFrameHeader(nil, s.opts.Magic, uint64(size))
	st.headerSize = int64(len(header))
	_, err = f.Write(header)
	if err == nil {
		var n int64
		n, err = io.CopyN(f, r, size)
		if err == io.EOF {
			err = fmt.Errorf("blockstore: staging block %s: %w after %d of %d bytes", hash, io.ErrUnexpectedEOF, n, size)
		}
	}
	if err == nil && !s.opts.NoSync {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return nil, errors.Join(err, os.Remove(st.path))
	}
	return st, nil
}

// Open returns a reader of the staged block's bytes.
func (st *Staged) Open() (*BlockReader, error) {
	f, err := os.Open(st.path)
	if err != nil {
		return nil, err
	}
	return &BlockReader{SectionReader: io.NewSectionReader(f, st.headerSize, st.size), f: f}, nil
}

// ReadBlock reads the staged block whole, for the few that need it in
// memory (a reorganisation's branch, a block a derived store lacks).
func (st *Staged) ReadBlock() (*chain.Block, error) {
	r, err := st.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	br, err := chain.NewBlockReader(r)
	if err != nil {
		return nil, err
	}
	return br.ReadBlock()
}

// Discard removes a staged block that is not to be kept.
func (st *Staged) Discard() error {
	if err := os.Remove(st.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Adopt keeps the staged block at height, as Put keeps a block given in
// memory (the same rules of height and replacement), without copying it:
// its file becomes the next segment, which the blocks after it continue.
// The staged block is gone once Adopt returns, kept or not.
func (s *Store) Adopt(height uint32, st *Staged) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if done, err := s.checkNextLocked(height, st.hash); done || err != nil {
		return errors.Join(err, st.Discard())
	}
	seg := s.seg
	if s.segSize > 0 || s.hasTip {
		seg++
	}
	if f, ok := s.files[seg]; ok { // an empty segment opened, never written
		f.Close()
		delete(s.files, seg)
	}
	if err := os.Rename(st.path, s.segmentPath(seg)); err != nil {
		return errors.Join(fmt.Errorf("blockstore: keeping block %s at height %d: %w", st.hash, height, err), st.Discard())
	}
	if !s.opts.NoSync {
		if err := fsutil.SyncDir(s.dir); err != nil {
			return err
		}
	}
	return s.commitLocked(height, Location{Hash: st.hash, Segment: seg, Offset: st.headerSize, Length: uint64(st.size)})
}

// BlockReader reads one block's bytes from its segment.
type BlockReader struct {
	*io.SectionReader
	f *os.File
}

// Close closes the segment file.
func (r *BlockReader) Close() error { return r.f.Close() }

// OpenBlock returns a reader of the raw block at height, for a block too
// large to read whole with Block; ok is false when the store does not
// hold it.
func (s *Store) OpenBlock(height uint32) (r *BlockReader, hash chainhash.Hash, ok bool, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.loc == nil {
		return nil, hash, false, ErrClosed
	}
	l, ok, err := s.locationLocked(height)
	if err != nil || !ok {
		return nil, hash, false, err
	}
	f, err := os.Open(s.segmentPath(l.Segment))
	if err != nil {
		return nil, hash, false, err
	}
	return &BlockReader{SectionReader: io.NewSectionReader(f, l.Offset, int64(l.Length)), f: f}, l.Hash, true, nil
}
