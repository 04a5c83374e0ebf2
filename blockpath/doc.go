// Package blockpath is the one path a block takes into a data directory.
// Every feeder of blocks (import, demo, the daemon's ConnectBlock, the
// follower of a node, bench --index) hands its blocks to a [Path], which
// orders the work:
//
//	connect:    check the block, keep its raw bytes, connect it to the store, index it
//	disconnect: unindex it, disconnect it from the store, drop its raw bytes
//
// and a reorganisation is the disconnections, tip first, then the
// connections. No feeder orders these steps itself.
//
// A block too large to hold in memory takes the same path in streamed
// form ([Path.ConnectStaged]): its feeder stages it in the block store
// from where it comes (a peer's socket), the checks read it from there,
// the block store keeps the staged file as it is, and the store connects
// it a chunk of transactions at a time, read back from the block store
// (utxo.Block.Chunks). Memory then grows with the block's transaction
// count (a txid each), not with its bytes; the address index alone takes
// the block whole.
//
// # One recovery rule
//
// The store's chain state is the truth. The block store (package
// blockstore) and the address index (package index) are derived from it:
// each holds the store's blocks up to its own tip. [Open] settles them
// with the store before the first block passes:
//
//   - a derived store that holds blocks above the store's tip, or off its
//     chain, is rolled back to the store's chain;
//   - the address index, when behind, catches up from the raw blocks the
//     block store keeps;
//   - what is still missing (the block store's own gap, or blocks it does
//     not keep) is asked of the feeder: [Path.Next] is the first height
//     the path needs, and the feeder sends from there (import reads it
//     from its files, the daemon's client and the follower resend it).
//     Until then any other new block is refused with a [*BehindError]
//     naming that height, so a gap never grows.
//
// A derived store too far off the store's chain to roll back is refused
// with the command that rebuilds it.
//
// # What a crash leaves
//
// Under --sync always each step is durable before the next begins, so a
// crash between two steps of a connection leaves the block store one
// block ahead of the store (kept, not connected) or the index one block
// behind it (connected, not indexed); between two steps of a
// disconnection, the index one block behind (unindexed first) or the block
// store one block ahead (not yet dropped). The block store never lacks a
// block the store holds, so the index always catches up from it. Under
// --sync block nothing is synced before the block's end, so a crash may
// also lose the last blocks of any of the three: a derived store may then
// be ahead of the store (rolled back by Open) or behind it (caught up from
// the block store, or from the feeder). Either way Open brings them level,
// or says what the feeder must send.
package blockpath
