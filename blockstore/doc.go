// Package blockstore keeps the raw blocks the store connects, so that any
// transaction and any block's transaction list can be served, as
// Blockbook's backend node would serve them.
//
// Blocks are appended to segment files (blk00000.dat, blk00001.dat, …) in
// Bitcoin Core's blk*.dat framing: the network's 4-byte disk magic, the
// block's length as 4 bytes little-endian, the raw block (from 4 GiB on,
// 0xffffffff and the length in 8 bytes, as Bitcoin SV writes it). A
// segment holds blocks until it reaches Options.SegmentBytes; the files
// can be read back by `utxostore import` like any blk*.dat file.
//
// # Blocks too large for memory
//
// Put takes a block in memory. A block too large for that is staged
// instead (Stage: written from its reader, a peer's socket, to a file of
// its own in DATA/blocks/incoming), read from there while it is checked
// (Staged.Open), then kept where it lies (Adopt: the file becomes the next
// segment) or discarded. OpenBlock reads a kept block as a stream. So a
// block is written once and never held whole.
//
// Where each block lies (segment, offset, length) is kept in a small
// Pebble database beside the segments, under its height and its hash:
//
//	'h' + height uint32 BE -> hash[32] + segment uint32 BE + offset uint64 BE + length uint32 BE
//	                          (length uint64 BE for a block of 4 GiB or more)
//	'x' + hash[32]         -> height uint32 BE
//
// # Disk cost
//
// The raw blocks themselves plus about 100 bytes of locations per block:
// the blocks are not compressed, because they are what the API serves.
// Options.Retention bounds the cost: with Retention n, only the newest n
// blocks are kept, and a segment is deleted once every block in it has
// fallen out of the window, so up to one segment more than the window
// stays on disk.
//
// # Crash safety
//
// A block's bytes are written (and, unless Options.NoSync, synced) before
// its location is committed, so a location always points at whole bytes.
// Bytes written after the last committed location (a crash in between) are
// cut off on Open, as are staged blocks and a segment adopted without its
// location. A block put again at a height the store holds (a reorg)
// replaces the location of that height and drops those above, and DropFrom
// drops a height and those above (a disconnection); the old bytes stay in
// their segment until it is pruned. The block path (package blockpath)
// keeps the block store level with the UTXO store.
package blockstore
