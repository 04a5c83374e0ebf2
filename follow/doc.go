// Package follow keeps a store at a Bitcoin node's tip over the P2P
// protocol: a version handshake, headers-first catch-up (getheaders, then
// getdata for several blocks at once, connected in order), the node's
// announcements at the tip (inv and headers), reorganisations in one
// blockpath.Path.Reorg call from the fork point its headers show, and the
// node's unconfirmed transactions, applied as unmined (Spend, then Create:
// a validator's order). Blocks go through the block path (package
// blockpath), which keeps them, connects them and indexes them; when the
// path names a block a derived store lacks (Path.Next below the store's
// tip), the follower asks the node for the store's own block again.
// Relay sends a transaction the other way.
//
// It speaks the protocol with btcd's peer and wire packages, asking for
// blocks and transactions in their non-witness form; the tests follow
// btcd on simnet. Two limits come with wire: the networks are those
// chaincfg knows (BSV's own P2P magic is not among them), and a block
// message may not exceed wire's 4 MB block payload.
//
// The path keeps the raw blocks in its block store before the store
// connects them; a reorganisation, or a restart that finds the store's tip
// off the node's chain, reads the blocks it disconnects from there (and
// asks the node for those it lacks), so the block store keeps at least the
// newest RollbackWindow blocks (New refuses a smaller retention). A fork
// deeper than the window is refused with a message that says so.
//
// Data from the node is checked before it reaches the store: headers that
// do not form a chain, a block that does not parse, fails the block checks
// or that the store refuses (a spend of a missing or spent output), and a
// message that does not decode each end the connection and ban the peer
// for Config.BanDuration (kept in Config.BanFile across restarts): no
// connection to it until the ban runs out, a log line naming the data,
// Banned and a metric saying until when. Headers that keep failing to
// connect to a known block end the connection without a ban, since a
// reorganising peer announces such headers too. A connection that fails
// or ends otherwise is made again with backoff.
package follow
