package follow

import (
	"context"
	"errors"
	"fmt"

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

// ErrNotConnected is Relay's answer while no connection to the peer is up,
// or when the connection ends before the transaction is written to it.
var ErrNotConnected = errors.New("not connected to the peer: the transaction was not relayed")

// relays is a session's way in for Relay's transactions: the session
// takes each from txs (unbuffered, so one it never takes is never
// reported sent) and answers on its relay's sent once it has written it to
// the connection, or failed to; ended is closed when the session ends.
type relays struct {
	txs   chan relay
	ended chan struct{}
}

type relay struct {
	tx   *chain.Tx
	sent chan error // buffered: the session never waits on Relay
}

// Relay stores a transaction as unmined, as it does the peer's (a double
// spend is refused, and not relayed), then sends it to the peer, which
// relays it on if it accepts it. It returns nil only once the transaction
// is written to the connection; ErrNotConnected when there is none, or
// the connection ends before the transaction is written to it.
func (f *Follower) Relay(ctx context.Context, tx *chain.Tx) error {
	in := f.relays.Load()
	if in == nil {
		return ErrNotConnected
	}
	if err := f.applyUnmined(ctx, tx); err != nil && !errors.Is(err, model.ErrTxExists) {
		return err
	}
	r := relay{tx: tx, sent: make(chan error, 1)}
	select {
	case in.txs <- r:
	case <-in.ended:
		return ErrNotConnected
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-r.sent:
		if err != nil {
			return fmt.Errorf("%w: %w", ErrNotConnected, err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
