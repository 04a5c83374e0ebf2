package server

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/utxostore/utxostore/blockbook"
	pb "github.com/utxostore/utxostore/proto/utxostorepb"
	"github.com/utxostore/utxostore/utxo/model"
)

// SendTx is the gRPC twin of /api/v2/sendtx: the node the daemon follows
// (blockbook.API.SetNode) takes the transaction, or it is Unavailable.
func (s *grpcService) SendTx(ctx context.Context, r *pb.TxRequest) (*pb.SendTxReply, error) {
	node := s.node()
	if node == nil {
		return nil, errNoNode
	}
	txid, err := node.SendTx(ctx, r.Tx)
	if err != nil {
		return nil, sendTxStatus(err)
	}
	return &pb.SendTxReply{Txid: txid[:]}, nil
}

// sendTxStatus is a refused transaction's gRPC status: the store's error
// when the store refused it (a double spend, say), InvalidArgument when it
// does not parse, Unavailable when the node could not be reached.
func sendTxStatus(err error) error {
	var refused *model.Error
	switch {
	case errors.As(err, &refused) && !errors.Is(err, model.ErrStorage):
		return storeStatus(err)
	case errors.Is(err, blockbook.ErrTxNotParsed):
		return badRequest("tx: %v", err)
	}
	return status.Errorf(codes.Unavailable, "%v", err)
}

// errNoNode answers SendTx while no node is connected: Unavailable, but
// the daemon's configuration, not a fault, so it is not logged as one.
var errNoNode = status.Error(codes.Unavailable, blockbook.ErrNoNode.Error())
