// Package record is the single implementation of the UTXO record rules:
// the byte codecs every engine stores opaquely, and the state machine
// (spend, unspend, set-mined, lock, freeze, reassign, conflicting,
// preserve and the delete-at-height rule) that the utxo package applies
// inside an engine's atomic read-modify-write callback, an
// engine.UpdateFunc: decode the current bytes, apply a rule, return the
// next bytes with their index terms (Record.Terms). The package's Example
// (example_test.go) runs one through an engine.
//
// The package is pure: no I/O, no goroutines, no clocks. Every operation is a
// method on *Record that mutates the record, returns the Signal set the
// caller must act on (propagate to the master or the child records, to the
// external blob store) and a typed *model.Error. A failed operation leaves the
// record exactly as it was, so the caller can simply keep the old bytes.
//
// Where an operation reads or changes little of a record, Inspect reads it
// into a View instead: the head (fixed fields and block lists) decoded, the
// outputs and the transaction left in the encoding. The same rules then
// run on it (View.SpendMulti, View.SetMined), and View.AppendEncode
// re-encodes the head, writes the outputs a spend changed and copies the
// rest.
//
// One transaction is stored as one master record (Index 0) holding the first
// batch of outputs plus all transaction metadata, and, when it has more than
// the batch size of outputs, child records (Index 1..N-1) holding the later
// batches plus the common metadata. See Build, keys.go and pagination.go.
//
// # Differences from the reference
//
// The model is Teranode's UTXO data model (bsv-blockchain/teranode at
// commit fb3d000, docs/topics/datamodel/utxo_data_model.md), and the
// reference for its behaviour is the same commit's stores/utxo
// (aerospike/teranode.lua and aerospike/*.go, sql/sql.go, utils.go,
// process_conflicting.go, tests/tests.go). This store follows it except in
// the places below, each kept on purpose.
//
// Beyond fb3d000:
//   - Lock record and creating flag. The reference at fb3d000 has neither;
//     this store follows Teranode's later lock record pattern
//     (https://bsv-blockchain.github.io/teranode/topics/features/utxo_lock_records):
//     the lock at index 0xFFFFFFFF (LockRecordIndex), and Spend refusing a
//     record whose Creating flag is set with UTXO_LOCKED, before any other
//     check.
//
// In this package:
//   - Unspend with UnspendOptions.Expected (teranode.lua unspend takes no
//     spending data and clears any spend): an unspend naming another spender
//     is a successful no-op, because the store's all-or-nothing Spend, its
//     conflict resolution and its cleanup undo spends while others may be
//     taking the same outputs, and must never release a rival's spend.
//   - ExpirePreserve (the reference's ProcessExpiredPreservations, in
//     aerospike.go and sql.go, sets DeleteAtHeight = height + retention on
//     every expired record): the DAH rule runs again instead, so a record
//     that still holds unspent outputs is not deleted with them.
//   - IncrementSpentExtraRecs (teranode.lua refuses a count below 0 or above
//     totalExtraRecs with INVALID_PARAMETER): the count is clamped, so a call
//     interrupted between a child's write and its master's leaves a bounded
//     drift instead of a master that refuses every later update.
//   - Signals (teranode.lua returns DAHSET/DAHUNSET and PRESERVE only for
//     external records, and keeps a lastSpentState bin to signal
//     ALLSPENT/NOTALLSPENT on children): every record returns its DAH and
//     PRESERVE signals and the caller decides what follows; the spent
//     signals compare the record before and after the operation, so no
//     extra bin is stored.
//   - SetLocked(true) returns DAHUNSET (teranode.lua's setLocked clears the
//     DAH of each record it runs on and signals nothing), so the external
//     blob loses its DAH too.
//   - Reassign (teranode.lua bumps recordUtxos so that the record is never
//     fully spent): RecordUtxos keeps counting the stored entries, and the
//     rule "a record with a reassignment is never scheduled" lives in
//     ownOutputsSpent, so the counters keep their meaning.
//   - Spend with the frozen marker as spending data (teranode.lua would
//     write it, freezing the output as a side effect): INVALID_SPEND, so
//     only FreezeUTXOs freezes.
//   - Build (aerospike/create.go sets a DAH at creation only for a
//     conflicting transaction): the DAH rule runs on every new master, so a
//     mined transaction with no output to spend is scheduled at once, and
//     child records with no stored output start out counted as spent.
//   - Build, SetMined and MarkOnLongestChain(false) at height 0 write
//     UnminedSince 1, because 0 means "mined" here.
//   - SetConflicting is applied to every record of the transaction
//     (aerospike/conflicting.go marks the master only), so a spend routed to
//     a child record meets the flag too.
//
// In package utxo, which applies these rules:
//   - Spend of an output whose transaction is gone is TX_NOT_FOUND even when
//     the spending transaction is stored: sql.go's answer, not
//     aerospike/spend.go's, which forgives it as already validated. Here
//     Create does not imply validation (ConnectBlock creates a block's
//     transactions before spending their inputs).
//   - SetConflicting(false) leaves the parents' conflictingChildren alone
//     (aerospike/conflicting.go appends to them when unmarking too), so the
//     list keeps meaning "spenders marked conflicting".
//   - GetConflictingChildren and GetCounterConflicting end a branch at a
//     transaction that is no longer stored (process_conflicting.go fails the
//     whole query): pruning a descendant is routine and must not make the
//     question unanswerable.
//   - GetSpend reports an unspent coinbase output that has not matured as
//     IMMATURE (aerospike/get.go's GetSpend ignores coinbase maturity), and
//     a missing transaction or a wrong UTXO hash as the typed errors
//     TX_NOT_FOUND and UTXO_HASH_MISMATCH (the reference answers status
//     NOT_FOUND, and a processing error).
//   - A multi-record Create whose phase 2 fails returns the error, where the
//     lock record pattern and the reference report success: the transaction is
//     stored but not yet spendable, and the caller learns it must retry (a
//     retry, or SetMinedMulti, completes it).
package record
