package server

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo"
)

// Relay sends a transaction to the node the daemon follows (serve --peer),
// storing it as unmined first; a store error (a double spend, say) means
// it was not relayed.
type Relay func(ctx context.Context, tx *chain.Tx) error

// handleSendTx is Blockbook's GET /api/v2/sendtx/{hex}: it answers
// {"result": "<txid>"} once the transaction is on its way to the node.
func (s *Server) handleSendTx(w http.ResponseWriter, r *http.Request) {
	if s.opts.Relay == nil {
		writeError(w, http.StatusServiceUnavailable, "this daemon follows no node (serve --peer), so it has none to relay to")
		return
	}
	raw, err := hex.DecodeString(r.PathValue("hex"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "the transaction is not hex: %v", err)
		return
	}
	tx, err := chain.ParseTx(raw)
	if err != nil {
		writeError(w, http.StatusBadRequest, "the transaction does not parse: %v", err)
		return
	}
	if err := s.opts.Relay(r.Context(), tx); err != nil {
		var refused *utxo.Error
		if errors.As(err, &refused) && !errors.Is(err, utxo.ErrStorage) {
			writeError(w, http.StatusBadRequest, "transaction %s refused: %v", tx.ID, err)
			return
		}
		writeError(w, http.StatusServiceUnavailable, "transaction %s: %v", tx.ID, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"result": tx.ID.String()})
}
