package utxo

import "github.com/utxostore/utxostore/utxo/record"

// Error is the typed error of every store operation. Branch on it with
// errors.Is and the sentinels below, or errors.As and Code.
type Error = record.Error

// ErrorCode names why an operation was refused.
type ErrorCode = record.ErrorCode

// The sentinels, for errors.Is. They compare error codes only.
var (
	ErrTxNotFound       = record.ErrTxNotFound
	ErrTxExists         = record.ErrTxExists
	ErrConflicting      = record.ErrConflicting
	ErrLocked           = record.ErrLocked
	ErrFrozen           = record.ErrFrozen
	ErrFrozenUntil      = record.ErrFrozenUntil
	ErrCoinbaseImmature = record.ErrCoinbaseImmature
	ErrSpent            = record.ErrSpent
	ErrUtxoNotFound     = record.ErrUtxoNotFound
	ErrUtxoHashMismatch = record.ErrUtxoHashMismatch
	ErrInvalidSpend     = record.ErrInvalidSpend
	ErrUtxoLocked       = record.ErrUtxoLocked
	ErrAlreadyFrozen    = record.ErrAlreadyFrozen
	ErrUtxoNotFrozen    = record.ErrUtxoNotFrozen
	ErrStorage          = record.ErrStorageError
	ErrMalformed        = record.ErrMalformed
	ErrInvalidParameter = record.ErrInvalidParameter
)
