package server

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/proto/pbconv"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// grpcCodes maps the store's error codes to gRPC codes: what the caller
// got wrong (InvalidArgument), what the state refuses (FailedPrecondition),
// what is missing or already there, and what broke (Internal).
var grpcCodes = map[model.ErrorCode]codes.Code{
	model.CodeTxNotFound:         codes.NotFound,
	model.CodeUtxoNotFound:       codes.NotFound,
	model.CodeTxExists:           codes.AlreadyExists,
	model.CodeMalformed:          codes.InvalidArgument,
	model.CodeInvalidParameter:   codes.InvalidArgument,
	model.CodeInvalidSpend:       codes.InvalidArgument,
	model.CodeUtxoHashMismatch:   codes.InvalidArgument,
	model.CodeUnsupportedVersion: codes.FailedPrecondition,
	model.CodeStorageError:       codes.Internal,
}

// storeStatus turns a store error into a gRPC status whose details carry
// the typed error, so the client can rebuild it.
func storeStatus(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return status.FromContextError(err).Err()
	}
	code := codes.Internal
	var e *model.Error
	switch {
	case errors.As(err, &e):
		var ok bool
		if code, ok = grpcCodes[e.Code]; !ok {
			code = codes.FailedPrecondition // SPENT, FROZEN, LOCKED, CONFLICTING, ...
		}
	case errors.As(err, new(*chain.CheckError)):
		code = codes.InvalidArgument
	case errors.Is(err, utxo.ErrNotTip), errors.Is(err, blockpath.ErrBehind), errors.Is(err, blockpath.ErrOtherChain):
		code = codes.FailedPrecondition
	}
	st := status.New(code, err.Error())
	if withDetails, derr := st.WithDetails(pbconv.ErrorToPB(err)); derr == nil {
		st = withDetails
	}
	return st.Err()
}

// badRequest is a request the server cannot decode.
func badRequest(format string, args ...any) error {
	return status.Error(codes.InvalidArgument, fmt.Sprintf(format, args...))
}
