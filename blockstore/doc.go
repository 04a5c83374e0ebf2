// Package blockstore keeps the raw blocks the store connects, so that any
// transaction and any block's transaction list can be served, as
// Blockbook's backend node would serve them.
//
// Blocks are appended to segment files (blk00000.dat, blk00001.dat, …) in
// Bitcoin Core's blk*.dat framing: the network's 4-byte magic, the block's
// length as 4 bytes little-endian, the raw block. A segment holds blocks
// until it reaches Options.SegmentBytes; the files can be read back by
// `utxostore import` like any blk*.dat file.
//
// Where each block lies (segment, offset, length) is kept in a small
// Pebble database beside the segments, under its height and its hash:
//
//	'h' + height uint32 BE -> hash[32] + segment uint32 BE + offset uint64 BE + length uint32 BE
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
// cut off on Open. A block put again at a height the store holds (a reorg)
// replaces the location of that height and drops those above, and DropFrom
// drops a height and those above (a disconnection); the old bytes stay in
// their segment until it is pruned. The block path (package blockpath)
// keeps the block store level with the UTXO store.
package blockstore
