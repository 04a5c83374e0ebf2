// Package chain reads Bitcoin-family blocks and transactions as they are
// stored on disk and sent over the wire, and holds the few BSV-specific
// codecs the store needs (Extended Format, the UTXO hash).
//
// It is built for BSV's scale: a block may be gigabytes with millions of
// transactions, and a single transaction may be far larger than Bitcoin's
// 4 MB block limit. So blocks are read one transaction at a time
// ([BlockReader]), and transactions are decoded by this package's own
// decoder, which produces ordinary [wire.MsgTx] values but has none of
// wire's size caps (see decode.go for why).
//
// Every parsed transaction keeps its exact bytes next to the parsed message
// ([Tx]), so storing or re-sending it never needs a re-serialisation, and
// its txid is computed once from those bytes.
//
// [Network] is one network of the family a store can hold (--network):
// Bitcoin's, Bitcoin Cash's (bch-*) and Bitcoin SV's (bsv-*), with btcd's
// parameters (genesis, proof-of-work limit, BIP34 height, P2P magic and
// port), its block files' disk magic, its block size limit and, for the
// two chains that share a P2P magic, the block where they split.
//
// [BlockRules] checks what a block can be checked for alone (proof of
// work, size, merkle root, coinbase, duplicate txids, BIP34 height, output
// values) before a store applies it; a block that fails gets a
// [*CheckError] naming the block and the check. [BlockRules.ChecksRepeats]
// says where a block must not repeat a transaction mined below it (BIP30),
// which the block path asks the store. [BlockRules.CheckStream]
// makes the same checks as a [BlockReader] reads the block, one
// transaction at a time ([MerkleTree] computes the root as it goes), for a
// block too large to hold in memory. [CheckOutputValues] is the
// value rule of one transaction, which the store also applies to every
// transaction it is given: each output and their sum in [0, [MaxMoney]].
//
// Malformed input always yields an error (a [*ParseError] naming the field,
// the transaction index and the byte offset, wrapping a sentinel such as
// [ErrTruncated]), never a panic, and a hostile length prefix never causes
// an allocation larger than the bytes actually present.
package chain
