// Package snapshot holds what the UTXO set snapshot formats share: the
// errors a reader refuses a file with (a *FileError naming the byte and
// the field, wrapping what was found) and Sorter, which puts a set's coins
// in outpoint order within a memory bound.
//
// The formats are in the sub-packages: core, Bitcoin Core's dumptxoutset
// file; teranode, the files of Teranode's utxopersister (the UTXO set, its
// headers, and each block's additions and deletions).
//
// A snapshot of a store holds the set Bitcoin Core would hold at the same
// block (coinstats.Coin.InSet): the store's unspent outputs of the longest
// chain, less the genesis block's coinbase and the outputs no script can
// spend, in either format. The store itself keeps no zero-value output
// whose script starts OP_FALSE OP_RETURN (utxo.StoredAsUTXO), which Core's
// set holds: past the first such output of a chain, a snapshot lacks it.
package snapshot
