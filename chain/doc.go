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
// [BlockRules] checks what a block can be checked for alone (proof of
// work, merkle root, coinbase, duplicate txids, BIP34 height, output
// values) before a store applies it; a block that fails gets a
// [*CheckError] naming the block and the check. [CheckOutputValues] is the
// value rule of one transaction, which the store also applies to every
// transaction it is given: each output and their sum in [0, [MaxMoney]].
//
// Malformed input always yields an error (a [*ParseError] naming the field,
// the transaction index and the byte offset, wrapping a sentinel such as
// [ErrTruncated]), never a panic, and a hostile length prefix never causes
// an allocation larger than the bytes actually present.
package chain
