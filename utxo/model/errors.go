package model

import (
	"fmt"
	"strings"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// ErrorCode names why an operation was refused. The names match the codes
// the reference store returns, so logs and APIs read the same.
type ErrorCode uint8

// The codes an operation can return. The zero value is never used.
const (
	CodeTxNotFound ErrorCode = iota + 1
	CodeConflicting
	CodeLocked
	CodeFrozen
	CodeFrozenUntil
	CodeCoinbaseImmature
	CodeSpent
	CodeUtxoNotFound
	CodeUtxoHashMismatch
	CodeInvalidSpend
	CodeUtxoLocked
	CodeAlreadyFrozen
	CodeUtxoNotFrozen
	CodeTxExists
	CodeStorageError
	CodeMalformed
	CodeUnsupportedVersion
	CodeInvalidParameter
)

var codeNames = [...]string{
	CodeTxNotFound:         "TX_NOT_FOUND",
	CodeConflicting:        "CONFLICTING",
	CodeLocked:             "LOCKED",
	CodeFrozen:             "FROZEN",
	CodeFrozenUntil:        "FROZEN_UNTIL",
	CodeCoinbaseImmature:   "COINBASE_IMMATURE",
	CodeSpent:              "SPENT",
	CodeUtxoNotFound:       "UTXO_NOT_FOUND",
	CodeUtxoHashMismatch:   "UTXO_HASH_MISMATCH",
	CodeInvalidSpend:       "INVALID_SPEND",
	CodeUtxoLocked:         "UTXO_LOCKED",
	CodeAlreadyFrozen:      "ALREADY_FROZEN",
	CodeUtxoNotFrozen:      "UTXO_NOT_FROZEN",
	CodeTxExists:           "TX_EXISTS",
	CodeStorageError:       "STORAGE_ERROR",
	CodeMalformed:          "MALFORMED",
	CodeUnsupportedVersion: "UNSUPPORTED_VERSION",
	CodeInvalidParameter:   "INVALID_PARAMETER",
}

// String returns the code's wire name, e.g. "UTXO_HASH_MISMATCH".
func (c ErrorCode) String() string {
	if int(c) < len(codeNames) && codeNames[c] != "" {
		return codeNames[c]
	}
	return fmt.Sprintf("ErrorCode(%d)", uint8(c))
}

// Error is the one error type of the store: every refusal of an operation
// is an *Error. Callers branch on Code (or use errors.Is with the Err*
// sentinels); TxID and Vout say which output was refused, and Spending
// carries the existing spender when Code is CodeSpent so a double-spend
// can be reported without a second read.
type Error struct {
	Code     ErrorCode
	TxID     chainhash.Hash
	Vout     uint32
	Spending *SpendingData
	Msg      string
}

// Error formats the code, the output and the message.
func (e *Error) Error() string {
	s := e.Code.String()
	if e.TxID != (chainhash.Hash{}) {
		s += fmt.Sprintf(" %s:%d", e.TxID, e.Vout)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Spending != nil {
		s += fmt.Sprintf(" (spent by %s:%d)", e.Spending.TxID, e.Spending.Vin)
	}
	return s
}

// Is reports whether target is an *Error with the same Code, so that
// errors.Is(err, model.ErrSpent) matches any SPENT error whatever its
// output or message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels for errors.Is; compare codes only.
var (
	ErrTxNotFound         = &Error{Code: CodeTxNotFound}
	ErrConflicting        = &Error{Code: CodeConflicting}
	ErrLocked             = &Error{Code: CodeLocked}
	ErrFrozen             = &Error{Code: CodeFrozen}
	ErrFrozenUntil        = &Error{Code: CodeFrozenUntil}
	ErrCoinbaseImmature   = &Error{Code: CodeCoinbaseImmature}
	ErrSpent              = &Error{Code: CodeSpent}
	ErrUtxoNotFound       = &Error{Code: CodeUtxoNotFound}
	ErrUtxoHashMismatch   = &Error{Code: CodeUtxoHashMismatch}
	ErrInvalidSpend       = &Error{Code: CodeInvalidSpend}
	ErrUtxoLocked         = &Error{Code: CodeUtxoLocked}
	ErrAlreadyFrozen      = &Error{Code: CodeAlreadyFrozen}
	ErrUtxoNotFrozen      = &Error{Code: CodeUtxoNotFrozen}
	ErrTxExists           = &Error{Code: CodeTxExists}
	ErrStorage            = &Error{Code: CodeStorageError}
	ErrMalformed          = &Error{Code: CodeMalformed}
	ErrUnsupportedVersion = &Error{Code: CodeUnsupportedVersion}
	ErrInvalidParameter   = &Error{Code: CodeInvalidParameter}
)

// NewError builds an *Error about output vout of txid (zero for none);
// format and args make its message.
func NewError(code ErrorCode, txid chainhash.Hash, vout uint32, format string, args ...any) *Error {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	return &Error{Code: code, TxID: txid, Vout: vout, Msg: msg}
}

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
