package server

import (
	"context"
	"crypto/subtle"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/utxostore/utxostore/proto/utxostorepb"
)

// readOnlyMethods are the RPCs that change nothing; every other RPC,
// including any added later, needs the token when one is configured (deny
// by default).
var readOnlyMethods = map[string]bool{}

func init() {
	for _, name := range []string{"Health", "Get", "BatchDecorate", "GetSpend", "GetSpendBatch", "GetUnminedTxs",
		"QueryOldUnminedTransactions", "PreviousOutputsDecorate", "GetCounterConflicting",
		"GetConflictingChildren", "GetBlockHeight", "GetMedianBlockTime", "Summary"} {
		readOnlyMethods["/"+pb.UtxoStore_ServiceDesc.ServiceName+"/"+name] = true
	}
}

// tokenOK reports whether the authorization value is "Bearer <token>".
func tokenOK(authorization, token string) bool {
	given, found := strings.CutPrefix(authorization, "Bearer ")
	return found && subtle.ConstantTimeCompare([]byte(given), []byte(token)) == 1
}

// authorize checks the bearer token of a mutating call.
func authorize(ctx context.Context, method, token string) error {
	if token == "" || readOnlyMethods[method] {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	values := md.Get("authorization")
	if len(values) == 0 {
		return status.Errorf(codes.Unauthenticated, "%s changes the store and needs an \"authorization: Bearer <token>\" header (the server's --token)", method)
	}
	if !tokenOK(values[0], token) {
		return status.Errorf(codes.Unauthenticated, "%s: wrong bearer token", method)
	}
	return nil
}

func unaryAuth(token string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := authorize(ctx, info.FullMethod, token); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

func streamAuth(token string) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if err := authorize(ss.Context(), info.FullMethod, token); err != nil {
			return err
		}
		return handler(srv, ss)
	}
}
