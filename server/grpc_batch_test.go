package server_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/utxostore/utxostore/proto/utxostorepb"
	"github.com/utxostore/utxostore/server"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// TestBatchWithAMalformedTransactionChangesNothing: a CreateBatch or
// SpendBatch whose second transaction does not parse is refused as a
// whole, naming that item, before the first is applied.
func TestBatchWithAMalformedTransactionChangesNothing(t *testing.T) {
	ctx := context.Background()
	_, c := serveForTest(t, newStore(t, utxo.Options{}), server.Options{})
	tx := wire.NewMsgTx(1)
	tx.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: chainhash.Hash{0x01}}, nil, nil))
	tx.AddTxOut(wire.NewTxOut(1000, []byte{0x51}))
	var raw bytes.Buffer
	if err := tx.Serialize(&raw); err != nil {
		t.Fatal(err)
	}
	malformed := []byte{0x01, 0x02}

	_, err := c.Stub().CreateBatch(ctx, &pb.CreateBatchRequest{Creates: []*pb.CreateRequest{{Tx: raw.Bytes()}, {Tx: malformed}}})
	wantRefused(t, err, "creates[1]")
	if _, err := c.Get(ctx, tx.TxHash()); !errors.Is(err, model.ErrTxNotFound) {
		t.Fatalf("the well-formed transaction of the refused batch: %v, want it not created", err)
	}

	_, err = c.Stub().SpendBatch(ctx, &pb.SpendBatchRequest{Spends: []*pb.SpendRequest{{Tx: raw.Bytes()}, {Tx: malformed}}})
	wantRefused(t, err, "spends[1]")
}

func wantRefused(t *testing.T, err error, item string) {
	t.Helper()
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), item) {
		t.Fatalf("got %v, want InvalidArgument naming %s", err, item)
	}
}
