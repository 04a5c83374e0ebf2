package blockbook

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/internal/httpreply"
	"github.com/utxostore/utxostore/utxo/model"
)

// Node is what a connected Bitcoin node gives the API: broadcasting. The
// API serves without one; a follower that keeps a peer connection plugs
// one in with API.SetNode.
type Node interface {
	// SendTx broadcasts a raw transaction and returns its txid. A
	// transaction the store refuses comes back as its *model.Error, bytes
	// that are no transaction wrap ErrTxNotParsed.
	SendTx(ctx context.Context, raw []byte) (chainhash.Hash, error)
}

// SetNode plugs in (or, with nil, removes) the node sendtx is answered
// by.
func (a *API) SetNode(n Node) {
	a.nodeMu.Lock()
	defer a.nodeMu.Unlock()
	a.node = n
}

// Node is the node plugged in with SetNode, nil when there is none. The
// daemon's gRPC SendTx relays through it too.
func (a *API) Node() Node {
	a.nodeMu.RLock()
	defer a.nodeMu.RUnlock()
	return a.node
}

// ErrNoNode answers sendtx while no node is plugged in.
var ErrNoNode = errors.New("no Bitcoin node is connected to this server (the store follows blocks it is sent; run a follower with a peer to broadcast)")

// ErrTxNotParsed is what a Node's SendTx wraps when the bytes are no
// transaction.
var ErrTxNotParsed = errors.New("the transaction does not parse")

func (a *API) handleSendTx(w http.ResponseWriter, r *http.Request) {
	hexTx := r.PathValue("hex")
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			httpreply.Error(w, http.StatusBadRequest, "Missing tx blob")
			return
		}
		hexTx = string(body)
	}
	out, code, err := a.sendTx(r.Context(), hexTx)
	if errors.Is(err, ErrNoNode) {
		// The operator's choice, not logged as a fault.
		httpreply.MarkConfigured(r)
	}
	writeOutcome(w, out, code, err)
}

// sendTx broadcasts the transaction hexTx holds through the node, as
// Blockbook's sendtx and websocket sendTransaction do, answering
// {"result": txid}. Bytes that are no transaction, and a transaction the
// store refuses, are the client's error (400); no node, or one that
// fails, is 503.
func (a *API) sendTx(ctx context.Context, hexTx string) (map[string]string, int, error) {
	if hexTx == "" {
		return nil, http.StatusBadRequest, errorf("Missing tx blob")
	}
	raw, err := hex.DecodeString(strings.TrimSpace(hexTx))
	if err != nil {
		return nil, http.StatusBadRequest, errorf("the tx blob is not hex: %v", err)
	}
	node := a.Node()
	if node == nil {
		return nil, http.StatusServiceUnavailable, ErrNoNode
	}
	txid, err := node.SendTx(ctx, raw)
	if err != nil {
		var refused *model.Error
		if errors.As(err, &refused) && !errors.Is(err, model.ErrStorage) || errors.Is(err, ErrTxNotParsed) {
			return nil, http.StatusBadRequest, err
		}
		return nil, http.StatusServiceUnavailable, err
	}
	return map[string]string{"result": txid.String()}, http.StatusOK, nil
}
