// Package redis is the distributed engine: utxostore's records on a Redis
// Cluster (or one plain Redis server), sharded over the hash slots, with
// replicas and failover from Redis itself.
//
//	e, err := redis.Open(ctx, redis.Options{
//		Addrs:     []string{"10.0.0.1:7000", "10.0.0.2:7000"},
//		Namespace: "mainnet",
//		Wait:      1, // every write batch waits for one replica
//	})
//
// # Atomic updates
//
// The record layer's rules run in Go. An Update reads its keys, runs the
// functions, and writes each changed record with a tiny generic Lua
// compare-and-set (script.go) that checks the record's random 8-byte stamp,
// stores the new bytes and keeps the record's index entries beside it; a
// record changed in between is computed again on the record as the
// compare-and-set found it. A batch costs one pipelined round trip per
// master to read and one to write, or only the one to write where the
// engine can assume the records' state: as its Updates last read or wrote
// them (Options.RecentRecords), or absent where it never saw them, which
// is right for the records a batch creates. The stamp check makes a wrong
// assumption cost one more round trip, never a wrong write.
//
// # Keys
//
// See layout.go: records are spread over the slots by their own key, in
// 1,024 buckets (by default) each pinned to one slot; each bucket has one
// sorted set per index on the same slot, so the CAS script touches one
// slot, and a Scan is one ZRANGEBYSCORE per bucket.
//
// # Resharding
//
// The engine routes every command itself, by the cluster's slot map, so it
// follows the cluster's redirections itself (pipeline.go). MOVED means the
// slot has a new master: the command is sent again after a reload of the
// map. ASK means the slot is being migrated and the key has already left
// (or never existed): the command is sent at once, after ASKING on the same
// connection, to the node importing the slot, and the map is left as it is,
// since the slot is still the migrating node's until the migration ends.
// So Get, Scan, ForEach, CreateOnly and the metadata carry on through a
// migration. Update and Delete do where they can: the CAS script names the
// record and its bucket's index sets, and Redis runs a multi-key command on
// a migrating slot only on a node that holds every one of its keys. A
// record that is on the same node as its bucket's index sets is written
// there; one apart from them, one whose bucket has an empty index set (it
// exists nowhere), and one being created get TRYAGAIN, and are retried
// until the migration of the slot ends, for up to Options.RetryTimeout.
// Checkpoint makes sure that its WAIT on a master follows a marker written
// on that master, not on a node importing the marker's slot.
//
// # Durability
//
// Redis acknowledges a write once the master has applied it and appended it
// to its AOF buffer; replication to replicas is asynchronous. So:
//
//   - A crash of a master process (kill -9) loses nothing acknowledged if it
//     restarts from its AOF: the AOF is written before the reply is sent.
//     A power loss of its machine loses what the AOF policy had not synced:
//     up to about a second with appendfsync everysec, nothing with always.
//     The engine cannot force an fsync (WAITAOF needs Redis 7.2; Debian 12
//     has 7.0), so SyncAlways's "survives power loss" holds only on servers
//     configured with appendfsync always.
//   - A failover (the master dies and its replica is promoted) loses every
//     write the replica had not received yet, typically the last few
//     milliseconds of acknowledged writes. Options.Wait guards against it:
//     with Wait = n, under SyncAlways each write batch ends with WAIT n on
//     every master it wrote to (same pipeline, no extra round trip), and
//     Update fails with a *WaitError unless n replicas acknowledged it.
//     Writes whose context defers their sync (engine.DeferSync: a block's)
//     skip the WAIT; the next write that waits first waits on every
//     master, as Checkpoint does, so it covers them (one more round trip
//     per block, not per write). Under SyncBlock only Checkpoint waits, so
//     a failover can lose the writes since the last checkpoint, which bulk
//     import replays anyway. WAIT is not a consensus protocol: Redis may
//     still, in rare partitions, promote a replica that missed a write, but
//     a plain master death with a live, acknowledging replica loses nothing.
//   - The price of Wait: a master whose replica is gone (promoted, or down)
//     cannot satisfy WAIT, so writes to its slots fail until a replica
//     rejoins; with Wait = 0 they carry on.
//
// A write whose reply is lost with its connection is settled by reading the
// record back (its stamp says whether it ran), so a failover is retried
// through rather than reported, for up to Options.RetryTimeout.
package redis
