// Package model holds the values that a store's caller and the store's
// rules share: the typed Error every refused operation returns, with its
// codes and sentinels; the SpendingData that names a spender; the
// TxInpoints a transaction spends; the MinedBlockInfo naming a block that
// mined transactions; and CoinbaseMaturity.
//
// It is the lowest layer that needs them: package utxo/record implements
// the rules over these values (and their byte formats), and package utxo,
// the store's API, takes and returns them. Callers name them here, and
// branch on a refusal with errors.Is(err, model.ErrSpent) or errors.As and
// Error.Code, whether the store is local or reached through the daemon
// (package client).
package model
