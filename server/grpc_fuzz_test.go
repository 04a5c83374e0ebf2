package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/utxostore/utxostore/proto/utxostorepb"
	"github.com/utxostore/utxostore/server"
)

// refusalCodes are the codes a call refusing its request answers with:
// the client's error, said. Internal, Unknown or DataLoss would be the
// daemon's own fault.
var refusalCodes = []codes.Code{codes.InvalidArgument, codes.NotFound, codes.AlreadyExists,
	codes.FailedPrecondition, codes.OutOfRange, codes.ResourceExhausted, codes.Aborted}

// FuzzGRPCRefusalsChangeNothing: whatever bytes a client sends as a
// transaction to Create or Spend, or as a block to ConnectBlock, a call
// the daemon refuses answers with a code that says it is the client's
// error and leaves the store as it was: the same UTXO set (Summary) and
// the same unmined transactions. The calls it accepts change the store,
// so each input starts from where the ones before left it.
func FuzzGRPCRefusalsChangeNothing(f *testing.F) {
	path, blocks := indexedPathAt(f, 4, 3)
	_, c := servePathForTest(f, path, server.Options{Network: "mainnet"})
	rpc := c.Stub()
	// A transaction spending block 1's coinbase, which the store checks
	// no signature of.
	spender := wire.NewMsgTx(1)
	spender.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: blocks[1].Txs[0].ID}, nil, nil))
	spender.AddTxOut(wire.NewTxOut(1000, []byte{0x51}))
	var raw bytes.Buffer
	if err := spender.Serialize(&raw); err != nil {
		f.Fatal(err)
	}
	f.Add(byte(0), raw.Bytes(), uint32(0))
	f.Add(byte(1), raw.Bytes(), uint32(0))
	f.Add(byte(2), blocks[3].Raw, uint32(3))
	f.Add(byte(2), blocks[2].Raw, uint32(2))
	f.Add(byte(1), blocks[2].Txs[0].Raw, uint32(0))
	f.Fuzz(func(t *testing.T, call byte, payload []byte, height uint32) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		before := storeState(ctx, t, rpc)
		var err error
		switch call % 3 {
		case 0:
			_, err = rpc.Create(ctx, &pb.CreateRequest{Tx: payload, BlockHeight: height})
		case 1:
			_, err = rpc.Spend(ctx, &pb.SpendRequest{Tx: payload, BlockHeight: height})
		case 2:
			_, err = rpc.ConnectBlock(ctx, &pb.ConnectBlockRequest{Block: payload, Height: height})
		}
		if err == nil {
			return
		}
		if code := status.Code(err); !slices.Contains(refusalCodes, code) {
			t.Fatalf("call %d refused with %v, not a client's error: %v", call%3, code, err)
		}
		if after := storeState(ctx, t, rpc); after != before {
			t.Fatalf("call %d was refused (%v), yet the store changed:\n%s\n%s", call%3, err, before, after)
		}
	})
}

// storeState is the store's UTXO set summary and its unmined
// transactions, as one comparable string.
func storeState(ctx context.Context, t *testing.T, rpc pb.UtxoStoreClient) string {
	t.Helper()
	sum, err := rpc.Summary(ctx, &pb.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := rpc.GetUnminedTxs(ctx, &pb.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	var unmined []string
	for {
		tx, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		unmined = append(unmined, fmt.Sprintf("%x locked %v creating %v", tx.Txid, tx.Locked, tx.Creating))
	}
	slices.Sort(unmined)
	return sum.String() + " unmined " + strings.Join(unmined, ",")
}
