package follow

import (
	"context"
	"errors"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// applyUnmined stores an unconfirmed transaction as a validator does:
// Spend its inputs first (a double spend of an output another unmined or
// mined transaction holds is refused there, and nothing changes), then
// Create it unmined. A transaction already stored is ErrTxExists, its
// spends (the same spending data) being idempotent.
func (f *Follower) applyUnmined(ctx context.Context, tx *chain.Tx) error {
	height := f.store.GetBlockHeight() + 1
	spends, err := f.store.Spend(ctx, tx, utxo.WithBlockHeight(height))
	if err != nil {
		return err
	}
	if _, err := f.store.Create(ctx, tx, height); err != nil {
		if errors.Is(err, model.ErrTxExists) {
			return err
		}
		return errors.Join(err, f.store.Unspend(ctx, spends, false))
	}
	return nil
}

// ErrNotConnected is Relay's answer while no connection to the peer is up.
var ErrNotConnected = errors.New("not connected to the peer: the transaction was not relayed")

// Relay stores a transaction as unmined, as it does the peer's (a double
// spend is refused, and not relayed), then sends it to the peer, which
// relays it on if it accepts it.
func (f *Follower) Relay(ctx context.Context, tx *chain.Tx) error {
	outbox := f.outbox.Load()
	if outbox == nil {
		return ErrNotConnected
	}
	if err := f.applyUnmined(ctx, tx); err != nil && !errors.Is(err, model.ErrTxExists) {
		return err
	}
	select {
	case *outbox <- tx:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
