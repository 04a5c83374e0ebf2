package utxo

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/record"
)

// The UTXO set's statistics as Bitcoin Core reports them (gettxoutsetinfo:
// txouts, total_amount, muhash; package coinstats) are kept in the chain
// state, so they are read without a walk. A block's change to them is
// worked out beside the blocks that follow it (statsworker.go), and a
// block's disconnection works it out again to take it away.

// SetStats returns the statistics of the UTXO set at the store's tip, as
// Core's gettxoutsetinfo names them (txouts, total_amount, muhash). They are
// read from the chain state, with the changes of the blocks it does not hold
// yet, not computed by a walk; Verify checks them against one.
func (db *DB) SetStats(ctx context.Context) (coinstats.Summary, error) {
	_, stats, err := db.statsAtTip(ctx)
	return stats.Finalize(), err
}

// statsAtTip returns the chain state and the set's statistics at its tip.
func (db *DB) statsAtTip(ctx context.Context) (chainState, coinstats.Stats, error) {
	db.chainMu.Lock()
	defer db.chainMu.Unlock()
	cs, err := db.loadChainState(ctx)
	if err != nil {
		return cs, coinstats.Stats{}, err
	}
	stats, err := cs.setStats()
	if err != nil {
		return cs, stats, err
	}
	pending, err := db.pendingStats(ctx, cs)
	if err != nil {
		return cs, stats, err
	}
	for i := range pending {
		stats.Combine(&pending[i])
	}
	return cs, stats, nil
}

// pendingStats returns the changes of the blocks cs's Stats lacks: the
// worker's, once it has finished them, or, in a store opened read-only,
// worked out here from the blocks' pending records.
func (db *DB) pendingStats(ctx context.Context, cs chainState) ([]coinstats.Stats, error) {
	if cs.StatsBehind == 0 {
		return nil, nil
	}
	var deltas []coinstats.Stats
	if db.stats != nil {
		if err := db.stats.wait(); err != nil {
			return nil, err
		}
		for _, d := range db.stats.finished() {
			deltas = append(deltas, *d.delta)
		}
		if len(deltas) != int(cs.StatsBehind) {
			return nil, fmt.Errorf("the set statistics are %d blocks behind the tip, and %d of them were worked out", cs.StatsBehind, len(deltas))
		}
		return deltas, nil
	}
	for h := cs.firstPending(); h <= cs.TipHeight; h++ {
		b, err := db.blockOf(ctx, cs, h)
		if err != nil {
			return nil, err
		}
		delta, err := db.blockStats(ctx, statsJob{height: h, hash: b.Hash}, runtime.GOMAXPROCS(0))
		if err != nil {
			return nil, err
		}
		deltas = append(deltas, delta)
	}
	return deltas, nil
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

// txsStats is the change a block's transactions txs (all of them, or a
// chunk) make to the set's statistics, with that many workers hashing:
// the coins they create, less those their inputs spend. A spent coin's
// output, height and coinbase flag come from its transaction's record
// (kept, spent, for the retention's blocks after the spend); an output
// one of txs creates and another spends counts for nothing. For a block
// to undo, a spent transaction the store no longer holds (spent more than
// the retention ago) counts for nothing too: the undo cannot bring its
// outputs back either.
func (db *DB) txsStats(ctx context.Context, txs []*chain.Tx, height uint32, block chainhash.Hash, workers int, undo bool) (coinstats.Stats, error) {
	var delta coinstats.Stats
	inBlock := make(map[chainhash.Hash]*chain.Tx, len(txs))
	var keys []engine.Key
	var ids []chainhash.Hash
	var inputs, outputs int
	for _, tx := range txs {
		inBlock[tx.ID] = tx
		inputs += len(tx.Msg.TxIn)
		outputs += len(tx.Msg.TxOut)
	}
	asked := map[chainhash.Hash]bool{}
	for _, tx := range txs {
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
	values, err := db.eng.Get(ctx, keys)
	if err != nil {
		return delta, storageErr("reading the records a block spends from", err)
	}
	// A spent coin: what its parent's record says, and where to read the
	// output (raw, the transaction's bytes; tx when they had to be parsed).
	type parentTx struct {
		raw      []byte
		tx       *chain.Tx
		height   uint32
		coinbase bool
	}
	parents := make(map[chainhash.Hash]parentTx, len(values)+len(txs))
	for i, v := range values {
		txid := ids[i]
		if v == nil && undo {
			continue
		}
		if v == nil {
			return delta, fmt.Errorf("block %s spends an output of %s, which the store does not hold", block, txid)
		}
		head, raw, err := record.InspectTx(v)
		if err != nil {
			return delta, err
		}
		if len(head.BlockHeights) == 0 {
			// Its outputs were never in the chain's set, which holds mined
			// transactions only (walkSet): spending one takes nothing out.
			continue
		}
		// The highest of its blocks, as the set's walk takes it (walkSet).
		p := parentTx{raw: raw, height: slices.Max(head.BlockHeights), coinbase: head.IsCoinbase}
		if head.External || head.OutputsOnly {
			r, err := record.Decode(v)
			if err != nil {
				return delta, err
			}
			if p.tx, err = db.txOf(ctx, r); err != nil {
				return delta, err
			}
		}
		parents[txid] = p
	}
	output := func(p parentTx, op wire.OutPoint) (uint64, []byte, error) {
		if p.tx == nil {
			return chain.TxOutput(p.raw, op.Index)
		}
		if int(op.Index) >= len(p.tx.Msg.TxOut) {
			return 0, nil, fmt.Errorf("block %s spends output %d of %s, which has %d", block, op.Index, op.Hash, len(p.tx.Msg.TxOut))
		}
		out := p.tx.Msg.TxOut[op.Index]
		return uint64(out.Value), out.PkScript, nil
	}
	// An output that txs create and spend again changes nothing: it is
	// neither added nor removed, which saves hashing it twice.
	spentHere := map[wire.OutPoint]bool{}
	for _, tx := range txs {
		if !tx.IsCoinbase() {
			for _, in := range tx.Msg.TxIn {
				if inBlock[in.PreviousOutPoint.Hash] != nil {
					spentHere[in.PreviousOutPoint] = true
				}
			}
		}
	}
	// Sized for every output and input, so that appending never copies
	// them: for a large block they are a replay's largest allocation.
	added, removed := make([]coinstats.Coin, 0, outputs), make([]coinstats.Coin, 0, inputs)
	// A coinbase repeating an earlier block's (BIP30's two exempt blocks)
	// overwrites that one's outputs: they leave the set as the repeat's
	// enter it, and the set holds each once, at the repeat's height, as
	// Bitcoin Core's does and the store's walk finds it (the record's
	// highest block).
	earlier, repeatsCoinbase := chain.RepeatedCoinbase(height, block)
	for _, tx := range txs {
		if !tx.IsCoinbase() {
			for _, in := range tx.Msg.TxIn {
				op := in.PreviousOutPoint
				if spentHere[op] {
					continue
				}
				p, inSet := parents[op.Hash]
				if !inSet {
					continue
				}
				value, script, err := output(p, op)
				if err != nil {
					return delta, fmt.Errorf("block %s spends output %d of %s: %w", block, op.Index, op.Hash, err)
				}
				removed = append(removed, coinstats.Coin{Outpoint: coinstats.Outpoint{TxID: op.Hash, Vout: op.Index}, Height: p.height,
					Coinbase: p.coinbase, Value: value, Script: script})
			}
		}
		repeats := repeatsCoinbase && tx.IsCoinbase()
		for vout, out := range tx.Msg.TxOut {
			if spentHere[wire.OutPoint{Hash: tx.ID, Index: uint32(vout)}] {
				continue
			}
			coin := coinstats.Coin{Outpoint: coinstats.Outpoint{TxID: tx.ID, Vout: uint32(vout)}, Height: height,
				Coinbase: tx.IsCoinbase(), Value: uint64(out.Value), Script: out.PkScript}
			added = append(added, coin)
			if repeats {
				coin.Height = earlier
				removed = append(removed, coin)
			}
		}
	}
	return hashCoins(added, removed, workers), nil
}

// statsOf is the change of block b, connected, worked out now: a block read
// in chunks is worked out after its writes, when the outputs an earlier
// chunk created are in the store, and a block to disconnect before its
// undo.
func (db *DB) statsOf(ctx context.Context, b Block, undo bool) (coinstats.Stats, error) {
	var delta coinstats.Stats
	err := b.EachChunk(func(txs []*chain.Tx) error {
		part, err := db.txsStats(ctx, txs, b.Height, b.Hash, runtime.GOMAXPROCS(0), undo)
		delta.Combine(&part)
		return err
	})
	return delta, err
}

// hashCoins is the change of adding one list of coins to the set and
// removing the other. Each coin costs a hash and a 3072-bit multiplication,
// so the work is shared by up to that many goroutines, each gathering a
// part apart, and the parts are combined.
func hashCoins(added, removed []coinstats.Coin, workers int) coinstats.Stats {
	workers = max(1, min(workers, (len(added)+len(removed))/minCoinsPerWorker))
	parts := make([]coinstats.Stats, workers)
	hashPart := func(w int) {
		for i := w; i < len(added); i += workers {
			parts[w].Add(&added[i])
		}
		for i := w; i < len(removed); i += workers {
			parts[w].Remove(&removed[i])
		}
	}
	if workers == 1 {
		hashPart(0) // no goroutine to start, nor another processor to wake
		return parts[0]
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { hashPart(w) })
	}
	wg.Wait()
	for w := 1; w < workers; w++ {
		parts[0].Combine(&parts[w])
	}
	return parts[0]
}

// minCoinsPerWorker keeps a small block's coins on one goroutine: a
// worker's start and its part's combination cost about as much as hashing
// this many coins.
const minCoinsPerWorker = 64
