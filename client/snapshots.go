package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/proto/pbconv"
	pb "github.com/utxostore/utxostore/proto/utxostorepb"
	"github.com/utxostore/utxostore/snapshot/teranode"
	"github.com/utxostore/utxostore/utxo"
)

// Backup has the daemon copy its whole data directory into dir, an
// absolute path on the daemon's machine that does not exist or is an
// empty directory, at one block while it serves. It returns that block and
// the set's statistics there.
func (c *Client) Backup(ctx context.Context, dir string) (utxo.Tip, coinstats.Summary, error) {
	r, err := c.rpc.Backup(ctx, &pb.BackupRequest{Dir: dir})
	if err != nil {
		return utxo.Tip{}, coinstats.Summary{}, callErr(err)
	}
	tip, err := blockRef(r.Tip, "tip")
	if err != nil || tip == nil {
		return utxo.Tip{}, coinstats.Summary{}, errors.Join(err, errors.New("the daemon's backup names no block"))
	}
	return *tip, coinstats.Summary{TxOuts: r.Txouts, TotalAmount: r.TotalAmount, MuHash: r.Muhash}, nil
}

// DumpCoins streams the daemon's UTXO set at its tip, read while no block
// connects: tip is called first, then coin with every coin of the set, in
// no particular order (the coin is coin's for the call only), and, with
// withHeaders, header with every block header from the genesis block to
// the tip, in height order.
func (c *Client) DumpCoins(ctx context.Context, withHeaders bool, tip func(utxo.Tip) error, coin func(*coinstats.Coin) error, header func(teranode.BlockIndex) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the stream when a callback fails
	stream, err := c.rpc.DumpCoins(ctx, &pb.DumpCoinsRequest{Headers: withHeaders})
	if err != nil {
		return callErr(err)
	}
	first := true
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			if first {
				return errors.New("the daemon's dump ended before it named its block")
			}
			return nil
		}
		if err != nil {
			return callErr(err)
		}
		if first {
			t, err := blockRef(m.Tip, "tip")
			if err != nil || t == nil {
				return errors.Join(err, errors.New("the daemon's dump does not begin with its block"))
			}
			if err := tip(*t); err != nil {
				return err
			}
			first = false
		}
		for _, pc := range m.Coins {
			txid, err := pbconv.Hash(pc.Txid, "coin txid")
			if err != nil {
				return err
			}
			c := coinstats.Coin{Outpoint: coinstats.Outpoint{TxID: txid, Vout: pc.Vout}, Height: pc.Height, Coinbase: pc.Coinbase, Value: pc.Value, Script: pc.Script}
			if err := coin(&c); err != nil {
				return err
			}
		}
		for _, ph := range m.Headers {
			var h wire.BlockHeader
			if err := h.Deserialize(bytes.NewReader(ph.Header)); err != nil {
				return fmt.Errorf("the daemon's header at height %d: %w", ph.Height, err)
			}
			if err := header(teranode.BlockIndex{Hash: h.BlockHash(), Height: ph.Height, TxCount: ph.TxCount, Header: h}); err != nil {
				return err
			}
		}
	}
}
