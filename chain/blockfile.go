package chain

import (
	"bufio"
	"fmt"
	"io"
	"os"
)

// Format is the layout of a file of blocks.
type Format int

const (
	// FormatUnknown is neither layout.
	FormatUnknown Format = iota
	// FormatFramed is Bitcoin Core's blk*.dat: magic, length, block, ...
	FormatFramed
	// FormatRawBlock is one bare serialised block (header, count,
	// transactions), as served by a node's REST or RPC interface.
	FormatRawBlock
)

func (f Format) String() string {
	switch f {
	case FormatFramed:
		return "blk*.dat framing"
	case FormatRawBlock:
		return "raw block"
	default:
		return "unknown"
	}
}

// DetectFormat guesses a file's layout from its first bytes (at least 4;
// 81 or more to recognise a raw block). A raw block starts with its header
// version, which is never one of the known magics, so the test is
// unambiguous for the networks listed in magic.go.
func DetectFormat(prefix []byte) Format {
	if len(prefix) >= 4 {
		if _, ok := knownMagics[Magic(prefix[:4])]; ok {
			return FormatFramed
		}
	}
	if len(prefix) > HeaderSize {
		return FormatRawBlock
	}
	return FormatUnknown
}

// BlockFile iterates the blocks of a file in either layout, so importers
// can take whatever path the user gives them.
type BlockFile struct {
	file   *os.File
	format Format
	frames *FrameReader  // FormatFramed
	raw    *bufio.Reader // FormatRawBlock
	block  *BlockReader  // FormatRawBlock: the one block, once returned
	done   bool          // FormatRawBlock: the block has been handed out
	err    error         // FormatRawBlock: sticky failure or io.EOF
}

// OpenBlockFile opens path and detects its layout.
func OpenBlockFile(path string) (*BlockFile, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r := bufio.NewReaderSize(file, readerBufferSize)
	prefix, _ := r.Peek(HeaderSize + 1)
	bf := &BlockFile{file: file, format: DetectFormat(prefix)}
	switch bf.format {
	case FormatFramed:
		bf.frames = NewFrameReader(r, Magic(prefix[:4]))
	case FormatRawBlock:
		bf.raw = r
	default:
		file.Close()
		return nil, fmt.Errorf("chain: %s: %w", path, ErrUnknownFormat)
	}
	return bf, nil
}

// Magic is the network magic of a framed file's blocks; false for a raw
// block file, which carries none.
func (b *BlockFile) Magic() (Magic, bool) {
	if b.format != FormatFramed {
		return Magic{}, false
	}
	return b.frames.Magic(), true
}

// Format is the detected layout.
func (b *BlockFile) Format() Format { return b.format }

// Next returns a streaming reader for the next block, or io.EOF after the
// last. A raw block file holds exactly one block; bytes after it are
// reported as ErrTrailingBytes.
func (b *BlockFile) Next() (*BlockReader, error) {
	if b.format == FormatFramed {
		return b.frames.Next()
	}
	if b.err != nil {
		return nil, b.err
	}
	if !b.done {
		b.done = true
		b.block, b.err = newBlockReader(&stream{r: b.raw, limit: -1}, nil)
		return b.block, b.err
	}
	b.err = io.EOF
	if err := b.block.skipRest(); err != nil {
		b.err = err
	} else if _, err := b.raw.Peek(1); err == nil {
		b.err = fieldErr(ErrTrailingBytes, int(b.block.src.n), "end of raw block file")
	}
	return nil, b.err
}

// Close closes the file.
func (b *BlockFile) Close() error { return b.file.Close() }
