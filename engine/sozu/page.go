package sozu

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// A deep bucket is stored as one or more pages of PageSize bytes:
//
//	[0:4]   CRC32C of bytes [4:PageSize]
//	[4]     page magic 0xB5
//	[5]     layer
//	[6:8]   page number within the bucket
//	[8:10]  pages in the bucket
//	[10:12] payload bytes used in this page
//	[12:20] bucket index within its layer
//	[20:]   payload: a slice of the encoded bucket
//
// The layer and index make a page written to the wrong place detectable,
// not just a page whose bytes rotted.
const (
	pageHeaderSize = 20
	pagePayload    = PageSize - pageHeaderSize
	pageMagic      = 0xB5
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// bucketAddr names a bucket: its layer (the top 8 bits) and its index
// within the layer of its shard (the rest; Options.withDefaults keeps a
// layout's indexes within them). One integer, so the maps it keys hash
// and compare a word, and addresses sort by layer, then index.
type bucketAddr uint64

const addrIndexBits = 56

func addrOf(layer uint8, index uint64) bucketAddr {
	return bucketAddr(uint64(layer)<<addrIndexBits | index)
}

func (a bucketAddr) layer() uint8  { return uint8(a >> addrIndexBits) }
func (a bucketAddr) index() uint64 { return uint64(a) & (1<<addrIndexBits - 1) }

func (a bucketAddr) String() string { return fmt.Sprintf("layer %d bucket %d", a.layer(), a.index()) }

// pageCount is the number of pages an encoded bucket of n bytes takes (an
// empty stream still takes one).
func pageCount(n int) int { return max(1, (n+pagePayload-1)/pagePayload) }

// encodePage fills p (PageSize bytes) with page seq of the count pages that
// carry an encoded bucket's stream, checksummed.
func encodePage(p []byte, addr bucketAddr, stream []byte, seq, count int) {
	chunk := stream[min(seq*pagePayload, len(stream)):min((seq+1)*pagePayload, len(stream))]
	clear(p)
	p[4] = pageMagic
	p[5] = addr.layer()
	binary.LittleEndian.PutUint16(p[6:], uint16(seq))
	binary.LittleEndian.PutUint16(p[8:], uint16(count))
	binary.LittleEndian.PutUint16(p[10:], uint16(len(chunk)))
	binary.LittleEndian.PutUint64(p[12:], addr.index())
	copy(p[pageHeaderSize:], chunk)
	binary.LittleEndian.PutUint32(p[0:], checksum(p[4:]))
}

// checkPage verifies one page read back for addr as page seq of count and
// returns its payload; the error says what is wrong.
func checkPage(p []byte, addr bucketAddr, seq, count int) ([]byte, error) {
	if got, want := checksum(p[4:]), binary.LittleEndian.Uint32(p[0:]); got != want {
		return nil, fmt.Errorf("page checksum %08x, stored %08x", got, want)
	}
	if p[4] != pageMagic || p[5] != addr.layer() || binary.LittleEndian.Uint64(p[12:]) != addr.index() {
		return nil, fmt.Errorf("page belongs to layer %d bucket %d", p[5], binary.LittleEndian.Uint64(p[12:]))
	}
	if int(binary.LittleEndian.Uint16(p[6:])) != seq || int(binary.LittleEndian.Uint16(p[8:])) != count {
		return nil, fmt.Errorf("page %d of %d, expected %d of %d", binary.LittleEndian.Uint16(p[6:]), binary.LittleEndian.Uint16(p[8:]), seq, count)
	}
	n := int(binary.LittleEndian.Uint16(p[10:]))
	if n > pagePayload {
		return nil, fmt.Errorf("payload length %d", n)
	}
	return p[pageHeaderSize : pageHeaderSize+n], nil
}
