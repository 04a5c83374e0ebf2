package server_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/gorilla/websocket"

	"github.com/utxostore/utxostore/blockbook"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/server"
)

// stallingIndex is the daemon's backend whose address index's
// transaction reads wait, once armed, until released: a subscriber's
// notification that reads slowly (a busy index, many subscribed
// addresses).
type stallingIndex struct {
	server.Backend
	mu       sync.Mutex
	armed    bool
	stalled  chan struct{} // closed by the first read that waits
	released chan struct{}
}

func (b *stallingIndex) AddressIndex() blockbook.AddressIndexReads {
	return stallingReads{AddressIndexReads: b.Backend.AddressIndex(), b: b}
}

type stallingReads struct {
	blockbook.AddressIndexReads
	b *stallingIndex
}

func (r stallingReads) TxAddresses(txid chainhash.Hash) (index.TxAddresses, bool, error) {
	r.b.mu.Lock()
	armed := r.b.armed
	if armed {
		r.b.armed = false
		close(r.b.stalled)
	}
	r.b.mu.Unlock()
	if armed {
		<-r.b.released
	}
	return r.AddressIndexReads.TxAddresses(txid)
}

// TestASlowSubscriberDoesNotHoldBlocksBack: while the notification of a
// websocket subscriber waits on a slow read, the block path goes on
// connecting blocks, and the subscriber hears of them once the read
// returns. The block path used to run the notifications under its lock,
// so one client's subscription held every block back.
func TestASlowSubscriberDoesNotHoldBlocksBack(t *testing.T) {
	ctx := context.Background()
	path, chainBlocks := indexedPathAt(t, 4, 2)
	backend := &stallingIndex{Backend: server.NewBackend(path), stalled: make(chan struct{}), released: make(chan struct{})}
	srv, _ := serveBackendForTest(t, backend, server.Options{Network: "mainnet"})
	path.OnConnect(srv.NotifyBlock)

	ws, _, err := websocket.DefaultDialer.Dial("ws://"+srv.HTTPAddr()+"/websocket", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	// Block 2's coinbase pays to a public key: its output script in hex
	// names the address, whose push reads the index.
	paid := hex.EncodeToString(chainBlocks[2].Txs[0].Msg.TxOut[0].PkScript)
	for _, req := range []map[string]any{
		{"id": "blocks", "method": "subscribeNewBlock", "params": map[string]any{}},
		{"id": "addresses", "method": "subscribeAddresses", "params": map[string]any{"addresses": []string{paid}}},
	} {
		if err := ws.WriteJSON(req); err != nil {
			t.Fatal(err)
		}
		var answer map[string]any
		if err := ws.ReadJSON(&answer); err != nil || answer["id"] != req["id"] {
			t.Fatalf("%s: %v (%v)", req["method"], answer, err)
		}
	}

	backend.mu.Lock()
	backend.armed = true
	backend.mu.Unlock()
	connected := make(chan error, 1)
	go func() {
		for height, b := range chainBlocks[2:] {
			if err := path.Connect(ctx, b, uint32(2+height)); err != nil {
				connected <- err
				return
			}
		}
		connected <- nil
	}()
	select {
	case <-backend.stalled:
	case <-time.After(30 * time.Second):
		t.Fatal("block 2's notification never read the index")
	}
	select {
	case err := <-connected:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		close(backend.released)
		t.Fatal("blocks 2 and 3 were not connected while a subscriber's notification waited on a read")
	}
	close(backend.released)

	for heard := map[float64]bool{}; !heard[2] || !heard[3]; {
		_, raw, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("the new blocks were not pushed (heard %v): %v", heard, err)
		}
		var push struct {
			ID   string         `json:"id"`
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal(raw, &push); err != nil {
			t.Fatal(err)
		}
		if push.ID == "blocks" {
			if h, ok := push.Data["height"].(float64); ok {
				heard[h] = true
			}
		} else if !strings.Contains(push.ID, "addresses") {
			t.Fatalf("an unexpected message: %s", raw)
		}
	}
}
