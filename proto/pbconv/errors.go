package pbconv

import (
	"errors"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	pb "github.com/utxostore/utxostore/proto/utxostorepb"
	"github.com/utxostore/utxostore/utxo/model"
)

// ErrorToPB encodes an error: a *model.Error keeps its code and output;
// any other error travels as its message with an empty code.
func ErrorToPB(err error) *pb.StoreError {
	if err == nil {
		return nil
	}
	var e *model.Error
	if !errors.As(err, &e) {
		return &pb.StoreError{Message: err.Error()}
	}
	out := &pb.StoreError{Code: e.Code.String(), Vout: e.Vout, Spending: SpendingDataToPB(e.Spending), Message: e.Msg}
	if e.TxID != (chainhash.Hash{}) {
		out.Txid = e.TxID[:]
	}
	return out
}

// ErrorFromPB decodes an error: a known code becomes a *model.Error, so
// errors.Is with the utxo sentinels works on the client's side. A missing
// or empty StoreError is no error: a list of errors (BatchReply) sends its
// successes as empty messages, since protobuf has no nil list element.
func ErrorFromPB(e *pb.StoreError) error {
	if e == nil || (e.Code == "" && e.Message == "") {
		return nil
	}
	code, ok := model.ParseErrorCode(e.Code)
	if !ok {
		return errors.New(e.Message)
	}
	out := &model.Error{Code: code, Vout: e.Vout, Msg: e.Message}
	copy(out.TxID[:], e.Txid)
	out.Spending, _ = SpendingDataFromPB(e.Spending)
	return out
}
