// Package follow keeps a store at a Bitcoin node's tip over the P2P
// protocol: a version handshake, headers-first catch-up (getheaders, then
// getdata for several blocks at once, connected in order), the node's
// announcements at the tip (inv and headers), reorganisations in one
// utxo.DB.Reorg call, and the node's unconfirmed transactions, applied as
// unmined (Spend, then Create: a validator's order).
//
// It speaks the protocol with btcd's peer and wire packages, so any node
// that speaks it (btcd, Bitcoin Core, SV Node) on the store's network will
// do. The raw blocks of the last RollbackWindow blocks are kept beside the
// store so that a reorganisation, or a restart that finds the store's tip
// off the node's chain, can disconnect them; a fork deeper than the window
// is refused with a message that says so.
//
// Data from the node is checked before it reaches the store: a header that
// does not connect, a block that does not parse or is not the one asked
// for, a transaction that does not parse, or a block the store refuses
// (a spend of a missing or spent output) each end the connection with a log
// line naming the peer and the data; the follower reconnects with backoff.
package follow
