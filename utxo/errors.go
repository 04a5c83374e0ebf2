package utxo

import (
	"strings"

	"github.com/utxostore/utxostore/utxo/record"
)

// Error is the typed error of every store operation. Branch on it with
// errors.Is and the sentinels below, or errors.As and Code.
type Error = record.Error

// ErrorCode names why an operation was refused.
type ErrorCode = record.ErrorCode

// The codes an Error carries; ErrorCode.String gives their wire names.
const (
	CodeTxNotFound         = record.CodeTxNotFound
	CodeConflicting        = record.CodeConflicting
	CodeLocked             = record.CodeLocked
	CodeFrozen             = record.CodeFrozen
	CodeFrozenUntil        = record.CodeFrozenUntil
	CodeCoinbaseImmature   = record.CodeCoinbaseImmature
	CodeSpent              = record.CodeSpent
	CodeUtxoNotFound       = record.CodeUtxoNotFound
	CodeUtxoHashMismatch   = record.CodeUtxoHashMismatch
	CodeInvalidSpend       = record.CodeInvalidSpend
	CodeUtxoLocked         = record.CodeUtxoLocked
	CodeAlreadyFrozen      = record.CodeAlreadyFrozen
	CodeUtxoNotFrozen      = record.CodeUtxoNotFrozen
	CodeTxExists           = record.CodeTxExists
	CodeStorageError       = record.CodeStorageError
	CodeMalformed          = record.CodeMalformed
	CodeUnsupportedVersion = record.CodeUnsupportedVersion
	CodeInvalidParameter   = record.CodeInvalidParameter
)

// The sentinels, for errors.Is. They compare error codes only.
var (
	ErrTxNotFound         = record.ErrTxNotFound
	ErrTxExists           = record.ErrTxExists
	ErrConflicting        = record.ErrConflicting
	ErrLocked             = record.ErrLocked
	ErrFrozen             = record.ErrFrozen
	ErrFrozenUntil        = record.ErrFrozenUntil
	ErrCoinbaseImmature   = record.ErrCoinbaseImmature
	ErrSpent              = record.ErrSpent
	ErrUtxoNotFound       = record.ErrUtxoNotFound
	ErrUtxoHashMismatch   = record.ErrUtxoHashMismatch
	ErrInvalidSpend       = record.ErrInvalidSpend
	ErrUtxoLocked         = record.ErrUtxoLocked
	ErrAlreadyFrozen      = record.ErrAlreadyFrozen
	ErrUtxoNotFrozen      = record.ErrUtxoNotFrozen
	ErrStorage            = record.ErrStorageError
	ErrMalformed          = record.ErrMalformed
	ErrUnsupportedVersion = record.ErrUnsupportedVersion
	ErrInvalidParameter   = record.ErrInvalidParameter
)

// codesByName inverts ErrorCode.String.
var codesByName = func() map[string]ErrorCode {
	m := map[string]ErrorCode{}
	for c := ErrorCode(1); c != 0; c++ {
		if name := c.String(); !strings.HasPrefix(name, "ErrorCode(") {
			m[name] = c
		}
	}
	return m
}()

// ParseErrorCode returns the code whose wire name is name ("SPENT",
// "TX_NOT_FOUND", ...), as a remote caller receives it.
func ParseErrorCode(name string) (ErrorCode, bool) {
	c, ok := codesByName[name]
	return c, ok
}
