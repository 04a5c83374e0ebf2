package server

import (
	"context"
	"crypto/subtle"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	pb "github.com/utxostore/utxostore/proto/utxostorepb"
)

// readOnlyMethods are the RPCs that change nothing; every other RPC,
// including any added later, needs the token when one is configured (deny
// by default).
var readOnlyMethods = func() map[string]bool {
	methods := map[string]bool{}
	for _, name := range []string{"Health", "Get", "BatchDecorate", "GetSpend", "GetSpendBatch", "GetUnminedTxs",
		"QueryOldUnminedTransactions", "PreviousOutputsDecorate", "GetCounterConflicting",
		"GetConflictingChildren", "GetBlockHeight", "GetMedianBlockTime", "Summary"} {
		methods["/"+pb.UtxoStore_ServiceDesc.ServiceName+"/"+name] = true
	}
	return methods
}()

// tokenOK reports whether the authorization value is "Bearer <token>".
func tokenOK(authorization, token string) bool {
	given, found := strings.CutPrefix(authorization, "Bearer ")
	return found && subtle.ConstantTimeCompare([]byte(given), []byte(token)) == 1
}

// authorize checks the bearer token of a mutating call from its headers.
func authorize(md metadata.MD, method, token string) error {
	if token == "" || readOnlyMethods[method] {
		return nil
	}
	values := md.Get("authorization")
	if len(values) == 0 {
		return status.Errorf(codes.Unauthenticated, "%s changes the store and needs an \"authorization: Bearer <token>\" header (the server's --token)", method)
	}
	if !tokenOK(values[0], token) {
		return status.Errorf(codes.Unauthenticated, "%s: wrong bearer token", method)
	}
	return nil
}

// tapAuth checks the token when a call's headers arrive, before its message
// is read: a refused call never gets its body into memory.
func tapAuth(token string) tap.ServerInHandle {
	return func(ctx context.Context, info *tap.Info) (context.Context, error) {
		return ctx, authorize(info.Header, info.FullMethodName, token)
	}
}
