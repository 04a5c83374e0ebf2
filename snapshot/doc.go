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
// block (coinstats.Coin.InSet): the unspent outputs of the longest chain,
// less the genesis block's coinbase and the outputs no script can spend, in
// either format. That includes the zero-value outputs whose script starts
// OP_FALSE OP_RETURN, which the store keeps out of its records
// (utxo.StoredAsUTXO) but Core's set holds (utxo.DB.ForEachCoin).
package snapshot
