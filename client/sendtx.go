package client

import (
	"context"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/proto/pbconv"
	pb "github.com/utxostore/utxostore/proto/utxostorepb"
)

// SendTx relays a serialised transaction to the node the daemon follows
// (serve --peer); the daemon stores it as unmined first, so a double spend
// comes back as the store's error and is not relayed.
func (c *Client) SendTx(ctx context.Context, rawTx []byte) (chainhash.Hash, error) {
	r, err := c.rpc.SendTx(ctx, &pb.TxRequest{Tx: rawTx})
	if err != nil {
		return chainhash.Hash{}, callErr(err)
	}
	return pbconv.Hash(r.Txid, "txid")
}
