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

	"github.com/utxostore/utxostore/chain"
	pb "github.com/utxostore/utxostore/proto/utxostorepb"
	"github.com/utxostore/utxostore/server"
)

// refusalCodes are the codes a call refusing its request answers with:
// the client's error, said. Internal, Unknown or DataLoss would be the
// daemon's own fault.
var refusalCodes = []codes.Code{codes.InvalidArgument, codes.NotFound, codes.AlreadyExists,
	codes.FailedPrecondition, codes.OutOfRange, codes.ResourceExhausted, codes.Aborted}

// FuzzGRPCRefusalsChangeNothing: whatever bytes a client sends as a
// transaction to Create or Spend, as a block to ConnectBlock, or as the
// outputs and transactions the calls that freeze, unfreeze, unspend,
// reassign, flag, preserve and delete name, a call the daemon refuses
// answers with a code that says it is the client's error and leaves the
// store as it was: the same UTXO set (Summary) and the same unmined
// transactions. The calls it accepts change the store, so each input
// starts from where the ones before left it.
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
	// The calls that name outputs or transactions, seeded with block 1's
	// and block 2's coinbases, and block 1's output with its UTXO hash.
	coinbase1, coinbase2 := blocks[1].Txs[0], blocks[2].Txs[0]
	out := coinbase1.Msg.TxOut[0]
	utxoHash := chain.UTXOHash(coinbase1.ID, 0, out.PkScript, uint64(out.Value))
	spenderID := spender.TxHash()
	named := slices.Concat(coinbase1.ID[:], utxoHash[:], spenderID[:], coinbase2.ID[:])
	for call := range byte(11) {
		if call >= 3 {
			f.Add(call, named, uint32(0))
		}
	}
	known := [][]byte{spenderID[:]}
	for _, b := range blocks {
		known = append(known, b.Txs[0].ID[:])
	}
	f.Fuzz(func(t *testing.T, call byte, payload []byte, height uint32) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		before := storeState(ctx, t, rpc, known)
		// The calls that name outputs or transactions take them from the
		// payload's 32-byte pieces (a shorter last one is malformed).
		ids := slices.Collect(slices.Chunk(payload, 32))
		piece := func(i int) []byte {
			if i < len(ids) {
				return ids[i]
			}
			return nil
		}
		spend := func(i int) *pb.Spend {
			return &pb.Spend{Txid: piece(i), Vout: height % 4, UtxoHash: piece(i + 1),
				Spending: &pb.SpendingData{Txid: piece(i + 2), Vin: height / 4 % 4}}
		}
		kind := int(call) % 11
		var err error
		switch kind {
		case 0:
			_, err = rpc.Create(ctx, &pb.CreateRequest{Tx: payload, BlockHeight: height})
		case 1:
			_, err = rpc.Spend(ctx, &pb.SpendRequest{Tx: payload, BlockHeight: height})
		case 2:
			_, err = rpc.ConnectBlock(ctx, &pb.ConnectBlockRequest{Block: payload, Height: height})
		case 3:
			_, err = rpc.FreezeUTXOs(ctx, &pb.SpendsRequest{Spends: []*pb.Spend{spend(0)}})
		case 4:
			_, err = rpc.UnFreezeUTXOs(ctx, &pb.SpendsRequest{Spends: []*pb.Spend{spend(0)}})
		case 5:
			_, err = rpc.Unspend(ctx, &pb.UnspendRequest{Spends: []*pb.Spend{spend(0)}, FlagAsLocked: height%2 == 1})
		case 6:
			_, err = rpc.ReAssignUTXO(ctx, &pb.ReAssignRequest{Utxo: spend(0), NewUtxo: spend(3)})
		case 7:
			_, err = rpc.SetConflicting(ctx, &pb.FlagTxIDsRequest{Txids: ids, Flag: height%2 == 1})
		case 8:
			_, err = rpc.SetLocked(ctx, &pb.FlagTxIDsRequest{Txids: ids, Flag: height%2 == 1})
		case 9:
			_, err = rpc.PreserveTransactions(ctx, &pb.PreserveRequest{Txids: ids, PreserveUntil: height})
		case 10:
			_, err = rpc.Delete(ctx, &pb.TxIDsRequest{Txids: ids})
		}
		if err == nil {
			return
		}
		if code := status.Code(err); !slices.Contains(refusalCodes, code) {
			t.Fatalf("call %d refused with %v, not a client's error: %v", kind, code, err)
		}
		if after := storeState(ctx, t, rpc, known); after != before {
			t.Fatalf("call %d was refused (%v), yet the store changed:\n%s\n%s", kind, err, before, after)
		}
	})
}

// storeState is the store's UTXO set summary, its unmined transactions
// and everything it holds of the transactions known (their flags, blocks
// and outputs' states), as one comparable string.
func storeState(ctx context.Context, t *testing.T, rpc pb.UtxoStoreClient, known [][]byte) string {
	t.Helper()
	var held []string
	for _, txid := range known {
		r, err := rpc.Get(ctx, &pb.GetRequest{Txid: txid, Fields: []pb.Field{pb.Field_FIELD_OUTPUTS}})
		if err != nil {
			held = append(held, fmt.Sprintf("%x: %v", txid, status.Code(err)))
			continue
		}
		held = append(held, r.Meta.String())
	}
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
	return sum.String() + " unmined " + strings.Join(unmined, ",") + " held " + strings.Join(held, "; ")
}
