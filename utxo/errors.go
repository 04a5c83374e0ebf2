package utxo

import "github.com/utxostore/utxostore/utxo/model"

// The names below alias package model's, for package server, which still
// names them here; every other caller names them in model, their one home.

// Error is model.Error.
type Error = model.Error

// ErrorCode is model.ErrorCode.
type ErrorCode = model.ErrorCode

// MinedBlockInfo is model.MinedBlockInfo.
type MinedBlockInfo = model.MinedBlockInfo

// The codes of model's of the same names.
const (
	CodeTxNotFound         = model.CodeTxNotFound
	CodeUtxoNotFound       = model.CodeUtxoNotFound
	CodeTxExists           = model.CodeTxExists
	CodeMalformed          = model.CodeMalformed
	CodeInvalidParameter   = model.CodeInvalidParameter
	CodeInvalidSpend       = model.CodeInvalidSpend
	CodeUtxoHashMismatch   = model.CodeUtxoHashMismatch
	CodeUnsupportedVersion = model.CodeUnsupportedVersion
	CodeStorageError       = model.CodeStorageError
)

// The sentinels of model's of the same names.
var (
	ErrTxNotFound = model.ErrTxNotFound
	ErrStorage    = model.ErrStorage
)
