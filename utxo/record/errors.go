package record

import (
	"fmt"

	"github.com/utxostore/utxostore/utxo/model"
)

// outputError builds an error about the output at offset of this record.
func (r *Record) outputError(code model.ErrorCode, offset uint32, format string, args ...any) *model.Error {
	return model.NewError(code, r.TxID, r.FirstVout+offset, format, args...)
}

// recordError builds an error about the record as a whole.
func (r *Record) recordError(code model.ErrorCode, format string, args ...any) *model.Error {
	return model.NewError(code, r.TxID, r.FirstVout, format, args...)
}

func malformed(format string, args ...any) *model.Error {
	return &model.Error{Code: model.CodeMalformed, Msg: fmt.Sprintf(format, args...)}
}
