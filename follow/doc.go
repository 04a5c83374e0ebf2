// Package follow keeps a store at a node's tip over the P2P
// protocol: a version handshake, headers-first catch-up (getheaders, then
// getdata for several blocks at once, connected in order; the headers
// kept run at most 8,000 blocks past the store's tip, and the rest of the
// node's chain is asked for as blocks connect), the node's
// announcements at the tip (inv and headers), reorganisations in one
// blockpath.Path.Reorg call from the fork point its headers show (onto a
// branch with more chain work than the store's blocks above the fork
// only: a node behind the store, or on a lighter branch, is not ahead of
// it, and the store stays where it is), and the
// node's unconfirmed transactions, applied as unmined (Spend, then Create:
// a validator's order). Blocks go through the block path (package
// blockpath), which keeps them, connects them and indexes them; when the
// path names a block a derived store lacks (Path.Next below the store's
// tip), the follower asks the node for the store's own block again.
// Relay sends a transaction the other way, and reports it sent only once
// the session has written it to the connection.
//
// # The family's protocols
//
// One follower follows the three chains of the family, on the store's
// network (chain.Network): Bitcoin, Bitcoin Cash and Bitcoin SV. Their
// P2P protocols share every message the follower exchanges, byte for byte
// (version, verack, ping, headers, inv, getdata, notfound, tx, block), and
// differ in a few places, which protocol.go holds as the one per-family
// part: the largest block a peer may send (the block rules' size limit:
// 4 MB, 32 MB, and Bitcoin SV's excessive block size, Config's through
// the path's rules), the largest transaction, Bitcoin SV's extended
// message header ("extmsg": a message over 4 GB carries its command and a
// 64-bit length after a header whose command is "extmsg"), segregated
// witness (on Bitcoin the follower advertises NODE_WITNESS and asks for
// blocks and transactions with their witnesses, so segwit transactions
// are kept and relayed as they were signed), and how a node of the
// sibling chain is told apart. Bitcoin Cash and Bitcoin SV share
// their P2P magics, genesis blocks and every block below height 556767:
// a node whose user agent names the other chain, or, on mainnet, whose
// headers reach the height the chains split at with the other chain's
// block there, is refused with an *OtherChainError, which stops the
// follower without banning a node that did nothing wrong. Services tell
// nothing: nodes of both advertise NODE_BITCOIN_CASH. A node of another
// network altogether (another P2P magic) is refused the same way.
//
// The connection (conn.go) is the follower's own: a handshake, message
// framing, and btcd's wire codecs for the messages above; blocks and
// transactions are parsed by package chain, which has no wire size caps.
// The framing is its own because none of the maintained Go packages reads
// a block message as a stream, and a Bitcoin SV block may be gigabytes:
//
//   - btcd's peer and wire (ISC, maintained) read every message whole and
//     cap a block at 4 MB;
//   - gcash/bchd's wire (ISC, v0.22.2, maintained) reads every message
//     whole, its block limit a package-wide setting (SetLimits) for the
//     whole process;
//   - bsv-blockchain/go-wire (ISC, v1.2.11, maintained by Teranode's
//     developers) streams only through a package-wide handler per command
//     (SetExternalHandler), its limit is package-wide too (SetLimits), and
//     its extmsg support is incomplete: reading an extended header parses
//     the inner command and length from the already consumed 24-byte header
//     (its own message_streaming_test.go says so), and writing a payload
//     over 4 GB returns without writing.
//
// So the follower frames messages itself, with limits per connection, and
// a block over 4 MB goes from the socket to the block store as it is read
// (blockstore.Store.Stage, its checksum checked on the way), then is
// checked, kept and connected from there in chunks
// (blockpath.Path.ConnectStaged): memory holds a chunk of transactions and
// a txid per transaction, never the block. A reorganisation holds its
// branch's blocks whole. The tests follow btcd (Bitcoin, simnet) and bchd
// (Bitcoin Cash, regtest) nodes, and a Bitcoin SV peer built on go-wire,
// which shows the framing against another implementation of it (extmsg
// headers written as Bitcoin SV writes them).
//
// The path keeps the raw blocks in its block store before the store
// connects them; a reorganisation, or a restart that finds the store's tip
// off the node's chain, reads the blocks it disconnects from there (and
// asks the node for those it lacks), so the block store keeps at least the
// newest RollbackWindow blocks (New refuses a smaller retention). A fork
// deeper than the window is refused with a message that says so.
//
// Data from the node is checked before it reaches the store: headers that
// do not form a chain or lack their proof of work, a block that does not parse, fails the block checks
// or that the store refuses (a spend of a missing or spent output), a
// message that does not decode, whose checksum is wrong, whose command is
// malformed, or whose header claims more bytes than the network allows its
// command (refused before the payload is read) each end the connection and
// ban the peer
// for Config.BanDuration (kept in Config.BanFile across restarts): no
// connection to it until the ban runs out, a log line naming the data,
// Banned and a metric saying until when. Headers that keep failing to
// connect to a known block end the connection without a ban, since a
// reorganising peer announces such headers too. A peer that goes quiet
// for Config.StallTimeout (it is pinged every half of it) is dropped: one
// that sends nothing at all, leaves getheaders unanswered, or sends no
// block while blocks are asked of it. A connection that fails or ends
// otherwise is made again with backoff.
package follow
