package utxo

import (
	"context"
	"fmt"
	"slices"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/record"
)

// The UTXO set's statistics as Bitcoin Core reports them (gettxoutsetinfo:
// txouts, total_amount, muhash; package coinstats) are kept in the chain
// state, so they change in the same write as the tip and are read without
// a walk. Each connected block keeps its own change to them in its
// metadata, which its disconnection subtracts again.

// SetStats returns the statistics of the UTXO set at the store's tip, as
// Core's gettxoutsetinfo names them (txouts, total_amount, muhash). They are
// read from the chain state, not computed by a walk; Verify checks them
// against one.
func (db *DB) SetStats(ctx context.Context) (coinstats.Summary, error) {
	cs, err := db.loadChainState(ctx)
	if err != nil {
		return coinstats.Summary{}, err
	}
	stats, err := cs.setStats()
	if err != nil {
		return coinstats.Summary{}, err
	}
	return stats.Finalize(), nil
}

// setStats decodes the chain state's statistics: the empty set's when it
// holds none (a store without blocks).
func (cs *chainState) setStats() (coinstats.Stats, error) {
	var stats coinstats.Stats
	if len(cs.Stats) == 0 {
		return stats, nil
	}
	if err := stats.UnmarshalBinary(cs.Stats); err != nil {
		return stats, fmt.Errorf("the store's chain state is damaged: its set statistics: %w", err)
	}
	return stats, nil
}

// applyStats adds a block's change to the chain state's statistics, or
// with undo takes it away.
func (cs *chainState) applyStats(delta *coinstats.Stats, undo bool) error {
	stats, err := cs.setStats()
	if err != nil {
		return err
	}
	if undo {
		stats.Subtract(delta)
	} else {
		stats.Combine(delta)
	}
	cs.Stats, err = stats.MarshalBinary()
	return err
}

// blockStats is the change b makes to the set's statistics: the coins its
// transactions create, less those their inputs spend. A spent coin's
// output, height and coinbase flag come from its transaction's record, or
// from the block itself for an output the block created. It runs after the
// block's spends succeeded, so every parent is there.
func (db *DB) blockStats(ctx context.Context, b Block) (coinstats.Stats, error) {
	var delta coinstats.Stats
	inBlock := make(map[chainhash.Hash]*chain.Tx, len(b.Txs))
	var keys []engine.Key
	var ids []chainhash.Hash
	for _, tx := range b.Txs {
		inBlock[tx.ID] = tx
	}
	asked := map[chainhash.Hash]bool{}
	for _, tx := range b.Txs {
		if tx.IsCoinbase() {
			continue
		}
		for _, in := range tx.Msg.TxIn {
			parent := in.PreviousOutPoint.Hash
			if inBlock[parent] == nil && !asked[parent] {
				asked[parent] = true
				keys = append(keys, engine.Key(record.MasterKey(parent)))
				ids = append(ids, parent)
			}
		}
	}
	recs, err := db.readRecords(ctx, keys)
	if err != nil {
		return delta, err
	}
	type parentTx struct {
		tx       *chain.Tx
		height   uint32
		coinbase bool
	}
	parents := make(map[chainhash.Hash]parentTx, len(recs)+len(b.Txs))
	for i, r := range recs {
		txid := ids[i]
		if r.err != nil {
			return delta, fmt.Errorf("reading the transaction %s a spend of block %s names: %w", txid, b.Hash, r.err)
		}
		if len(r.rec.BlockHeights) == 0 {
			return delta, fmt.Errorf("block %s spends an output of %s, which no block of the chain holds", b.Hash, txid)
		}
		tx, err := db.txOf(ctx, r.rec)
		if err != nil {
			return delta, err
		}
		// The highest of its blocks, as the set's walk takes it (walkSet).
		parents[txid] = parentTx{tx: tx, height: slices.Max(r.rec.BlockHeights), coinbase: r.rec.IsCoinbase}
	}
	for _, tx := range b.Txs {
		parents[tx.ID] = parentTx{tx: tx, height: b.Height, coinbase: tx.IsCoinbase()}
	}
	var c coinstats.Coin
	for _, tx := range b.Txs {
		if !tx.IsCoinbase() {
			for _, in := range tx.Msg.TxIn {
				op := in.PreviousOutPoint
				p := parents[op.Hash]
				if int(op.Index) >= len(p.tx.Msg.TxOut) {
					return delta, fmt.Errorf("block %s spends output %d of %s, which has %d", b.Hash, op.Index, op.Hash, len(p.tx.Msg.TxOut))
				}
				out := p.tx.Msg.TxOut[op.Index]
				c = coinstats.Coin{Outpoint: coinstats.Outpoint{TxID: op.Hash, Vout: op.Index}, Height: p.height, Coinbase: p.coinbase,
					Value: uint64(out.Value), Script: out.PkScript}
				delta.Remove(&c)
			}
		}
		for vout, out := range tx.Msg.TxOut {
			c = coinstats.Coin{Outpoint: coinstats.Outpoint{TxID: tx.ID, Vout: uint32(vout)}, Height: b.Height, Coinbase: tx.IsCoinbase(),
				Value: uint64(out.Value), Script: out.PkScript}
			delta.Add(&c)
		}
	}
	return delta, nil
}
