package follow

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/blob"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/internal/peertest"
	"github.com/utxostore/utxostore/utxo"
)

// relayFollower runs a follower of node over a fresh memory store (with a
// blob store, for a large transaction) holding a transaction of outputs
// outputs to spend, until the test ends; it returns once the follower is
// at the peer's tip, with the funding transaction and the follower's log.
func relayFollower(t *testing.T, node *peertest.Peer, outputs int) (*Follower, *chain.Tx, <-chan string) {
	t.Helper()
	blobs, err := blob.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store, err := utxo.Open(context.Background(), memory.New(), utxo.Options{Network: "simnet", Blobs: blobs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	funding := wire.NewMsgTx(1)
	funding.AddTxIn(wire.NewTxIn(wire.NewOutPoint(&chainhash.Hash{9}, 0), []byte{0x51}, nil))
	for range outputs {
		funding.AddTxOut(wire.NewTxOut(1e8, []byte{0x51}))
	}
	fund := parsedTx(t, funding)
	if _, err := store.Create(context.Background(), fund, 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	running := false
	// After the peer's cleanup, which drops the connections: a session
	// stuck writing to a peer that stopped reading ends then.
	t.Cleanup(func() {
		cancel()
		if !running {
			return
		}
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	node.Blocks = blocksByHash(simnet.GenesisBlock)
	logged := make(chan string, 100)
	f := followerOver(t, node.Listen(t), Config{Logger: slog.New(lineHandler{logged})}, store, blockStore(t))
	running = true
	go func() { done <- f.Run(ctx) }()
	waitForLine(t, logged, "at the peer's tip")
	return f, fund, logged
}

// waitForLine waits for a log line containing want, at most 10s.
func waitForLine(t *testing.T, logged <-chan string, want string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	var lines []string
	for {
		select {
		case line := <-logged:
			if strings.Contains(line, want) {
				return
			}
			lines = append(lines, line)
		case <-deadline:
			t.Fatalf("no log line saying %q within 10s; the log:\n%s", want, strings.Join(lines, "\n"))
		}
	}
}

func parsedTx(t *testing.T, msg *wire.MsgTx) *chain.Tx {
	t.Helper()
	var raw bytes.Buffer
	if err := msg.Serialize(&raw); err != nil {
		t.Fatal(err)
	}
	tx, err := chain.ParseTx(raw.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// spending is a transaction spending funding's output vout to an output
// whose script is script.
func spending(t *testing.T, funding *chain.Tx, vout uint32, script []byte) *chain.Tx {
	t.Helper()
	msg := wire.NewMsgTx(1)
	msg.AddTxIn(wire.NewTxIn(wire.NewOutPoint(&funding.ID, vout), []byte{0x51}, nil))
	msg.AddTxOut(wire.NewTxOut(1e7, script))
	return parsedTx(t, msg)
}

// TestARelayedTransactionReachesThePeer: once Relay returns nil, the peer
// receives the transaction.
func TestARelayedTransactionReachesThePeer(t *testing.T) {
	txs := make(chan *wire.MsgTx, 1)
	node := &peertest.Peer{Txs: txs}
	f, funding, _ := relayFollower(t, node, 1)
	tx := spending(t, funding, 0, []byte{0x51})
	if err := f.Relay(context.Background(), tx); err != nil {
		t.Fatalf("Relay: %v", err)
	}
	select {
	case got := <-txs:
		if got.TxHash() != tx.ID {
			t.Fatalf("the peer received %s, want %s", got.TxHash(), tx.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the peer did not receive the relayed transaction within 10s")
	}
}

// TestRelayFailsWhenTheSessionEndsBeforeSendingIt: a session busy writing
// a large transaction to a peer that stopped reading takes no other one,
// and Relay of another times out instead of reporting it sent; when the
// peer then drops the connection, Relay of the large transaction, and of
// one handed over meanwhile, return ErrNotConnected. Relay used to put
// each transaction in a buffer of the session's and return nil: a
// transaction in the buffer of a session that ended was never sent, and
// the wallet took it for broadcast.
func TestRelayFailsWhenTheSessionEndsBeforeSendingIt(t *testing.T) {
	stopped := make(chan struct{}, 1)
	txs := make(chan *wire.MsgTx, 10)
	node := &peertest.Peer{StopAtTx: stopped, Txs: txs}
	f, funding, logged := relayFollower(t, node, 3)
	// Larger than the connection's buffers on both sides, which the
	// kernel grows to a few megabytes at most.
	large := spending(t, funding, 0, bytes.Repeat([]byte{0x6a}, 48<<20))
	first := make(chan error, 1)
	go func() { first <- f.Relay(context.Background(), large) }()
	select {
	case <-stopped:
	case err := <-first:
		t.Fatalf("Relay returned %v before the peer had the transaction's header, which it never reads past", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the peer did not see the large transaction's header within 10s")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := f.Relay(ctx, spending(t, funding, 1, []byte{0x51})); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Relay to a session busy writing another transaction returned %v, want the context's deadline", err)
	}
	handedOver := make(chan error, 1)
	go func() { handedOver <- f.Relay(context.Background(), spending(t, funding, 2, []byte{0x51})) }()

	node.Drop()
	for what, relayed := range map[string]chan error{"the large transaction": first, "a transaction handed over meanwhile": handedOver} {
		select {
		case err := <-relayed:
			if !errors.Is(err, ErrNotConnected) {
				t.Errorf("Relay of %s, which the peer never received: %v, want ErrNotConnected", what, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Relay of %s did not return within 10s of the connection's end", what)
		}
	}
	waitForLine(t, logged, "reconnecting")
	if err := f.Relay(context.Background(), spending(t, funding, 2, []byte{0x51})); !errors.Is(err, ErrNotConnected) {
		t.Errorf("Relay with no connection: %v, want ErrNotConnected", err)
	}
	if len(txs) > 0 {
		t.Errorf("the peer received %d transactions, having read none", len(txs))
	}
}
