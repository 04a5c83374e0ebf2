package main

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/utxostore/utxostore/chain"
	pb "github.com/utxostore/utxostore/proto/utxostorepb"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// halfOpenCalls opens n calls of method over conns connections of their
// own: each sends its headers and never its message. They end when ctx
// does or the daemon cuts them off.
func halfOpenCalls(t *testing.T, ctx context.Context, addr string, conns, n int, method string) []grpc.ClientStream {
	t.Helper()
	var streams []grpc.ClientStream
	for i := range conns {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		for range n / conns {
			// Creating a stream sends its headers; the message would go
			// with SendMsg, which is never called.
			s, err := cc.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, method)
			if err != nil {
				t.Fatalf("half-open call on connection %d: %v", i, err)
			}
			streams = append(streams, s)
		}
	}
	return streams
}

// withinASecond runs call with a one-second deadline and fails t when it
// does not answer in time.
func withinASecond(t *testing.T, what string, call func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	if err := call(ctx); err != nil {
		t.Errorf("%s with 64 half-open calls open: %v after %s", what, err, time.Since(start).Round(time.Millisecond))
	}
}

// TestHalfOpenCallsLeaveGRPCAnswering: 64 calls on 8 connections that
// send their headers and never their message hold no memory budget, so
// another client's Health, GetBlockHeight and an authorized Create answer
// within a second while they stay open (the budget is one largest message
// here: one call holding it would freeze the rest).
func TestHalfOpenCallsLeaveGRPCAnswering(t *testing.T) {
	d := startDaemon(t, "serve", "--engine", "memory", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--token", "s3cret", "--http-public",
		"--max-inflight-bytes", "67108864")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	halfOpenCalls(t, ctx, d.grpc, 8, 64, "/utxostore.v1.UtxoStore/Get")
	waitMetric(t, d, "utxostore_grpc_calls_awaiting_message", 64)
	c := dialDaemon(t, d, "s3cret")
	withinASecond(t, "Health", func(ctx context.Context) error { _, err := c.Info(ctx); return err })
	withinASecond(t, "GetBlockHeight", func(ctx context.Context) error {
		_, err := c.Stub().GetBlockHeight(ctx, &pb.Empty{})
		return err
	})
	withinASecond(t, "an authorized Create", func(ctx context.Context) error {
		_, err := c.Create(ctx, valuesTx(t, 1000), 1)
		return err
	})
}

// TestHalfOpenCallIsCutOff: a call whose message does not arrive within
// --grpc-read-timeout has its connection closed, and the daemon says so.
func TestHalfOpenCallIsCutOff(t *testing.T) {
	d := startDaemon(t, "serve", "--engine", "memory", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--grpc-read-timeout", "1s")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	streams := halfOpenCalls(t, ctx, d.grpc, 1, 2, "/utxostore.v1.UtxoStore/Get")
	waitMetric(t, d, "utxostore_grpc_calls_awaiting_message", 2)
	for _, s := range streams {
		err := s.RecvMsg(new(pb.MetaReply))
		if status.Code(err) != codes.Unavailable {
			t.Errorf("a half-open call: want it cut off (Unavailable), got %v after %s", err, time.Since(start))
		}
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("the calls were cut off after %s, before --grpc-read-timeout", took)
	}
	waitMetric(t, d, "utxostore_grpc_calls_awaiting_message", 0)
	waitLog(t, d, "closed a gRPC connection: a call's message did not arrive in time")
}

// waitLog waits, up to 20 seconds, for the daemon to log want.
func waitLog(t *testing.T, d *daemon, want string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(d.log(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not log %q within 20s:\n%s", want, d.log())
		}
	}
}

// metric is the value of a metric without labels on the daemon's
// /metrics, and whether it is there.
func metric(t *testing.T, d *daemon, name string) (float64, bool) {
	t.Helper()
	_, body := httpGet(t, "http://"+d.http+"/metrics")
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}

// waitMetric waits, up to 20 seconds, for the metric to reach want.
func waitMetric(t *testing.T, d *daemon, name string, want float64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, ok := metric(t, d, name)
		if ok && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: want %v within 20s, it is %v (present: %v)", name, want, got, ok)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// valuesTx is a transaction spending a made-up output into outputs of
// the values given.
func valuesTx(t *testing.T, values ...int64) *chain.Tx {
	t.Helper()
	msg := wire.NewMsgTx(1)
	msg.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Hash: [32]byte{0xaa}, Index: 3}, SignatureScript: []byte{0x51}})
	for i, v := range values {
		msg.AddTxOut(wire.NewTxOut(v, demoScript(uint32(i))))
	}
	return chain.NewTx(msg)
}

// TestNegativeOutputIsRefused: a Create of a transaction with a -5 sat
// output is refused with InvalidArgument naming the output, and stores
// nothing; a Spend by it is refused, naming the output, and spends
// nothing.
func TestNegativeOutputIsRefused(t *testing.T) {
	d := startDaemon(t, "serve", "--engine", "memory", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
	c := dialDaemon(t, d, "")
	ctx := testContext(t)
	parent := valuesTx(t, 1000)
	if _, err := c.Create(ctx, parent, 1); err != nil {
		t.Fatal(err)
	}
	msg := wire.NewMsgTx(1)
	msg.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Hash: parent.ID}, SignatureScript: []byte{0x51}})
	msg.AddTxOut(wire.NewTxOut(1000, demoScript(7)))
	msg.AddTxOut(wire.NewTxOut(-5, demoScript(8)))
	bad := chain.NewTx(msg)

	_, err := c.Stub().Create(ctx, &pb.CreateRequest{Tx: bad.Raw, BlockHeight: 1})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "output 1 of transaction "+bad.ID.String()+" has value -5, below 0") {
		t.Errorf("Create with a -5 sat output: want InvalidArgument naming output 1, got %v", err)
	}
	if _, err := c.Get(ctx, bad.ID); !errors.Is(err, model.ErrTxNotFound) {
		t.Errorf("the refused transaction is in the store: %v", err)
	}
	_, err = c.Spend(ctx, bad)
	if !errors.Is(err, model.ErrInvalidParameter) || !strings.Contains(err.Error(), "output 1") {
		t.Errorf("Spend by a transaction with a -5 sat output: want INVALID_PARAMETER naming output 1, got %v", err)
	}
	meta, err := c.Get(ctx, parent.ID, utxo.FieldOutputs)
	if err != nil || meta.Outputs[0].SpendingData != nil {
		t.Errorf("the refused spend spent its input: %+v, %v", meta, err)
	}
}

// TestSpendOfTheLastOutputNumberIsUtxoNotFound: spending output
// 4294967295 of a stored transaction answers UTXO_NOT_FOUND, as output 999
// does, not TX_NOT_FOUND.
func TestSpendOfTheLastOutputNumberIsUtxoNotFound(t *testing.T) {
	d := startDaemon(t, "serve", "--engine", "memory", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
	c := dialDaemon(t, d, "")
	ctx := testContext(t)
	parent := valuesTx(t, 1000, 2000)
	if _, err := c.Create(ctx, parent, 1); err != nil {
		t.Fatal(err)
	}
	for _, vout := range []uint32{999, math.MaxUint32} {
		msg := wire.NewMsgTx(1)
		msg.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Hash: parent.ID, Index: vout}, SignatureScript: []byte{0x51}})
		msg.AddTxOut(wire.NewTxOut(500, demoScript(9)))
		if _, err := c.Spend(ctx, chain.NewTx(msg)); !errors.Is(err, model.ErrUtxoNotFound) {
			t.Errorf("spending output %d of a stored transaction: want UTXO_NOT_FOUND, got %v", vout, err)
		}
	}
}

// TestCreateNeedingTheBlobStoreIsRefusedClearly: a Create of 100,000
// outputs, which goes to the blob store the daemon has not got, is refused
// with InvalidArgument saying so, and logs no ERROR (it is no fault).
func TestCreateNeedingTheBlobStoreIsRefusedClearly(t *testing.T) {
	d := startDaemon(t, "serve", "--engine", "memory", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0")
	c := dialDaemon(t, d, "")
	values := make([]int64, 100_000)
	for i := range values {
		values[i] = 1
	}
	big := valuesTx(t, values...)
	_, err := c.Stub().Create(testContext(t), &pb.CreateRequest{Tx: big.Raw, BlockHeight: 1})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "100000 outputs") || !strings.Contains(err.Error(), "blob store") {
		t.Errorf("Create of 100,000 outputs without a blob store: want InvalidArgument naming the blob store, got %v", err)
	}
	if strings.Contains(d.log(), "level=ERROR") {
		t.Errorf("the refusal was logged as an error:\n%s", d.log())
	}
}
