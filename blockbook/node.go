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

// nodeOrUnavailable returns the connected node, or answers 503 and returns
// nil when there is none: the operator's choice, not logged as a fault.
func (a *API) nodeOrUnavailable(w http.ResponseWriter, r *http.Request) Node {
	node := a.Node()
	if node == nil {
		httpreply.MarkConfigured(r)
		httpreply.Error(w, http.StatusServiceUnavailable, "%v", ErrNoNode)
	}
	return node
}

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
	if hexTx == "" {
		httpreply.Error(w, http.StatusBadRequest, "Missing tx blob")
		return
	}
	raw, err := hex.DecodeString(strings.TrimSpace(hexTx))
	if err != nil {
		httpreply.Error(w, http.StatusBadRequest, "the tx blob is not hex: %v", err)
		return
	}
	node := a.nodeOrUnavailable(w, r)
	if node == nil {
		return
	}
	txid, err := node.SendTx(r.Context(), raw)
	if err != nil {
		var refused *model.Error
		if errors.As(err, &refused) && !errors.Is(err, model.ErrStorage) || errors.Is(err, ErrTxNotParsed) {
			httpreply.Error(w, http.StatusBadRequest, "%v", err)
		} else {
			httpreply.Error(w, http.StatusServiceUnavailable, "%v", err)
		}
		return
	}
	httpreply.JSON(w, http.StatusOK, map[string]string{"result": txid.String()})
}
