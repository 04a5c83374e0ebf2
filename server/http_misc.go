package server

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// Node is what a connected Bitcoin node gives the API: fee estimates and
// broadcasting. The daemon serves without one; a follower that keeps a
// peer connection plugs one in with Server.SetNode.
type Node interface {
	// EstimateFee returns the fee rate, in BTC per kB as Blockbook
	// prints it, for confirmation within blocks blocks.
	EstimateFee(ctx context.Context, blocks int) (string, error)
	// SendTx broadcasts a raw transaction and returns its txid. A
	// transaction the store refuses comes back as its *model.Error, bytes
	// that are no transaction wrap ErrTxNotParsed.
	SendTx(ctx context.Context, raw []byte) (chainhash.Hash, error)
}

// SetNode plugs in (or, with nil, removes) the node estimatefee and
// sendtx are answered by.
func (s *Server) SetNode(n Node) {
	s.bb.mu.Lock()
	defer s.bb.mu.Unlock()
	s.bb.node = n
}

func (s *Server) connectedNode() Node {
	s.bb.mu.RLock()
	defer s.bb.mu.RUnlock()
	return s.bb.node
}

// blockbookState is the Blockbook API's state in the Server.
type blockbookState struct {
	mu   sync.RWMutex
	node Node
	hub  wsHub
}

const noNode = "no Bitcoin node is connected to this server (the store follows blocks it is sent; run a follower with a peer to estimate fees and broadcast)"

// nodeOrUnavailable returns the connected node, or answers 503 and returns
// nil when there is none: the operator's choice, not logged as a fault.
func (s *Server) nodeOrUnavailable(w http.ResponseWriter, r *http.Request) Node {
	node := s.connectedNode()
	if node == nil {
		configured5xx(r)
		writeError(w, http.StatusServiceUnavailable, "%s", noNode)
	}
	return node
}

func (s *Server) handleEstimateFee(w http.ResponseWriter, r *http.Request) {
	blocks, err := strconv.Atoi(r.PathValue("blocks"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "Parameter 'number of blocks' is not a number")
		return
	}
	node := s.nodeOrUnavailable(w, r)
	if node == nil {
		return
	}
	fee, err := node.EstimateFee(r.Context(), blocks)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "estimating the fee: %v", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"result": fee})
}

func (s *Server) handleSendTx(w http.ResponseWriter, r *http.Request) {
	hexTx := r.PathValue("hex")
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			writeError(w, http.StatusBadRequest, "Missing tx blob")
			return
		}
		hexTx = string(body)
	}
	if hexTx == "" {
		writeError(w, http.StatusBadRequest, "Missing tx blob")
		return
	}
	raw, err := hex.DecodeString(strings.TrimSpace(hexTx))
	if err != nil {
		writeError(w, http.StatusBadRequest, "the tx blob is not hex: %v", err)
		return
	}
	node := s.nodeOrUnavailable(w, r)
	if node == nil {
		return
	}
	txid, err := node.SendTx(r.Context(), raw)
	if err != nil {
		var refused *model.Error
		if errors.As(err, &refused) && !errors.Is(err, model.ErrStorage) || errors.Is(err, ErrTxNotParsed) {
			writeError(w, http.StatusBadRequest, "%v", err)
		} else {
			writeError(w, http.StatusServiceUnavailable, "%v", err)
		}
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"result": txid.String()})
}

func (s *Server) handleBlockIndex(w http.ResponseWriter, r *http.Request) {
	hash, code, err := s.blockHash(r.Context(), r.PathValue("height"))
	writeOutcome(w, map[string]string{"blockHash": hash}, code, err)
}

// blockHash is the hash of the block at the height param names (the tip
// for a param that is not a height), as Blockbook's block-index answers.
func (s *Server) blockHash(ctx context.Context, param string) (string, int, error) {
	height, isHeight := heightParam(param)
	if !isHeight {
		tip, ok, err := s.backend.Tip(ctx)
		if err != nil || !ok {
			return "", http.StatusInternalServerError, errorf("the store holds no block (%v)", err)
		}
		return tip.Hash.String(), http.StatusOK, nil
	}
	b, ok, err := s.backend.BlockAt(ctx, height)
	if err != nil {
		return "", http.StatusInternalServerError, err
	}
	if !ok {
		return "", http.StatusBadRequest, errorf("Block not found, height %d is above the tip", height)
	}
	return b.Hash.String(), http.StatusOK, nil
}

// unminedTxs lists the store's transactions that no block holds yet:
// what Blockbook calls the mempool.
func (s *Server) unminedTxs(ctx context.Context) ([]*utxo.UnminedTransaction, error) {
	it, err := s.backend.GetUnminedTxIterator(ctx)
	if err != nil {
		return nil, err
	}
	var list []*utxo.UnminedTransaction
	for {
		t, err := it.Next(ctx)
		if err != nil || t == nil {
			return list, err
		}
		list = append(list, t)
	}
}
