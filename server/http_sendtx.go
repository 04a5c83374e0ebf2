package server

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/utxostore/utxostore/chain"
	pb "github.com/utxostore/utxostore/proto/utxostorepb"
	"github.com/utxostore/utxostore/utxo"
)

// errNoRelay answers sendtx on a daemon that follows no node.
var errNoRelay = errors.New("this daemon follows no node (serve --peer), so it has none to relay to")

// Relay sends a transaction to the node the daemon follows (serve --peer),
// storing it as unmined first; a store error (a double spend, say) means
// it was not relayed.
type Relay func(ctx context.Context, tx *chain.Tx) error

// handleSendTx is Blockbook's GET /api/v2/sendtx/{hex}: it answers
// {"result": "<txid>"} once the transaction is on its way to the node.
func (s *Server) handleSendTx(w http.ResponseWriter, r *http.Request) {
	if s.opts.Relay == nil {
		writeError(w, http.StatusServiceUnavailable, "%v", errNoRelay)
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

// SendTx is the gRPC twin of /api/v2/sendtx.
func (s *grpcService) SendTx(ctx context.Context, r *pb.TxRequest) (*pb.SendTxReply, error) {
	if s.relay == nil {
		return nil, status.Error(codes.Unavailable, errNoRelay.Error())
	}
	tx, err := chain.ParseTx(r.Tx)
	if err != nil {
		return nil, badRequest("tx: %v", err)
	}
	if err := s.relay(ctx, tx); err != nil {
		var refused *utxo.Error
		if errors.As(err, &refused) {
			return nil, storeStatus(err)
		}
		return nil, status.Errorf(codes.Unavailable, "transaction %s: %v", tx.ID, err)
	}
	return &pb.SendTxReply{Txid: tx.ID[:]}, nil
}
