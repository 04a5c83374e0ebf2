package chain

import (
	"bufio"
	"encoding/binary"
	"io"
	"slices"
)

// FrameReader iterates the blocks of a Bitcoin Core style blk*.dat file:
// each block is framed as 4-byte network magic, 4-byte little-endian
// length, then the raw block; a length of 0xffffffff is followed by the
// 8-byte length of a block of 4 GiB or more, as Bitcoin SV writes it.
//
// Bitcoin Core preallocates block files and fills them as blocks arrive, so
// a file usually ends in zeros. A frame position holding a zero magic is
// therefore read as the end of the data, not as corruption.
type FrameReader struct {
	r     *bufio.Reader
	magic Magic
	frame int64 // number of frame headers read so far
	off   int64 // file offset of the current frame
	next  int64 // file offset of the frame after it
	cur   *BlockReader
	err   error // sticky
	// scratch is passed from each block's reader to the next, so that
	// files of small blocks do not allocate a fresh one per block.
	scratch []byte
}

const frameHeaderSize = 8

// NewFrameReader reads frames from r. Every frame must carry magic; a zero
// Magic accepts whatever the first frame carries and then insists on it.
func NewFrameReader(r io.Reader, magic Magic) *FrameReader {
	return &FrameReader{r: bufio.NewReaderSize(r, readerBufferSize), magic: magic}
}

// Magic is the network magic the frames carry (after the first frame when
// the reader was created with a zero Magic).
func (f *FrameReader) Magic() Magic { return f.magic }

// Offset is the file offset of the frame returned by the last Next or
// NextBlock call.
func (f *FrameReader) Offset() int64 { return f.off }

// Next returns a streaming reader for the next block, or io.EOF at the end
// of data. Any part of the previous block not read is skipped. The
// returned BlockReader's errors are *FrameError carrying the frame number
// and offset; it also reports ErrTrailingBytes if the block ends before its
// frame does.
func (f *FrameReader) Next() (*BlockReader, error) {
	size, err := f.nextFrame()
	if err != nil {
		return nil, err
	}
	frame, off := f.frame-1, f.off
	wrap := func(err error) error { return &FrameError{Frame: frame, Offset: off, Err: err} }
	br, err := newBlockReader(&stream{r: f.r, limit: int64(size)}, wrap)
	if err != nil {
		f.err = err
		return nil, err
	}
	br.scratch, f.scratch = f.scratch, nil
	f.cur = br
	return br, nil
}

// NextBlock reads the next whole block into memory and parses it, or
// returns io.EOF at the end of data.
func (f *FrameReader) NextBlock() (*Block, error) {
	size, err := f.nextFrame()
	if err != nil {
		return nil, err
	}
	src := stream{r: f.r, limit: int64(size)}
	raw, err := src.appendN(nil, size)
	if err == nil {
		var blk *Block
		if blk, err = ParseBlock(raw); err == nil {
			return blk, nil
		}
	}
	f.err = &FrameError{Frame: f.frame - 1, Offset: f.off, Err: err}
	return nil, f.err
}

// nextFrame skips what is left of the current frame and reads the next
// frame header, returning the block length.
func (f *FrameReader) nextFrame() (uint64, error) {
	if f.err != nil {
		return 0, f.err
	}
	if cur := f.cur; cur != nil {
		f.cur = nil
		f.scratch = cur.scratch
		left, _ := cur.src.remaining()
		n, err := f.r.Discard(int(left))
		cur.src.n += int64(n)
		if err != nil {
			f.err = &FrameError{Frame: f.frame - 1, Offset: f.off, Err: readErr(err)}
			return 0, f.err
		}
	}
	f.off = f.next

	var hdr [frameHeaderSize]byte
	n, err := io.ReadFull(f.r, hdr[:4])
	if err != nil {
		if err == io.EOF || (err == io.ErrUnexpectedEOF && isZero(hdr[:n])) {
			f.err = io.EOF // clean end, or short zero padding
		} else {
			f.err = &FrameError{Frame: f.frame, Offset: f.off, Err: fieldErr(readErr(err), 0, "frame magic")}
		}
		return 0, f.err
	}
	got := Magic(hdr[:4])
	if got == (Magic{}) {
		f.err = io.EOF // preallocation padding
		return 0, f.err
	}
	if f.magic == (Magic{}) {
		f.magic = got
	}
	if got != f.magic {
		f.err = &FrameError{Frame: f.frame, Offset: f.off, Err: &MagicError{Offset: f.off, Want: f.magic, Got: got}}
		return 0, f.err
	}
	if _, err := io.ReadFull(f.r, hdr[4:]); err != nil {
		f.err = &FrameError{Frame: f.frame, Offset: f.off, Err: fieldErr(readErr(err), 4, "frame length")}
		return 0, f.err
	}
	size, headerSize := uint64(binary.LittleEndian.Uint32(hdr[4:])), int64(frameHeaderSize)
	if size == extendedFrameSize {
		var ext [8]byte
		if _, err := io.ReadFull(f.r, ext[:]); err != nil {
			f.err = &FrameError{Frame: f.frame, Offset: f.off, Err: fieldErr(readErr(err), 8, "frame length (64 bits)")}
			return 0, f.err
		}
		size, headerSize = binary.LittleEndian.Uint64(ext[:]), frameHeaderSize+8
	}
	f.frame++
	f.next = f.off + headerSize + int64(size)
	return size, nil
}

// extendedFrameSize in a frame's 4-byte length says that the length
// follows in 8 bytes: Bitcoin SV's framing of a block of 4 GiB or more
// (bitcoin-sv src/block_file_access.cpp, WriteIndexHeader).
const extendedFrameSize = 0xffffffff

// AppendFrameHeader appends the blk*.dat frame header of a block of size
// bytes to dst: magic and the 4-byte length, or, from 0xffffffff bytes
// on, 0xffffffff and the 8-byte length, as Bitcoin SV writes it.
func AppendFrameHeader(dst []byte, magic Magic, size uint64) []byte {
	dst = append(dst, magic[:]...)
	if size < extendedFrameSize {
		return binary.LittleEndian.AppendUint32(dst, uint32(size))
	}
	dst = binary.LittleEndian.AppendUint32(dst, extendedFrameSize)
	return binary.LittleEndian.AppendUint64(dst, size)
}

func isZero(b []byte) bool {
	return !slices.ContainsFunc(b, func(c byte) bool { return c != 0 })
}
