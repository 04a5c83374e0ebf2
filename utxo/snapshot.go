package utxo

import (
	"context"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/model"
	"github.com/utxostore/utxostore/utxo/record"
)

// A UTXO snapshot (Bitcoin Core's dumptxoutset file, Teranode's UTXO set
// file) holds the unspent outputs of the chain up to a block and nothing
// else: no spent output, no input, no whole transaction. A store loaded
// from one keeps a record per transaction, as always, holding what the
// snapshot gives of it:
//
//   - its outputs at their vouts, each stored with its UTXO hash as an
//     unspent output, and the vouts the snapshot lacks (spent or never
//     spendable) not stored, so a spend of them is UTXO_NOT_FOUND;
//   - in place of the transaction, the outputs it has, as a UTXOWrapper
//     (the layout of an external .outputs blob), flagged OutputsOnly: Get
//     gives a transaction of those outputs alone, with no inputs;
//   - mined at the coin's height in block id 0, the id of no block the
//     store connected (block ids count from 1), with the coinbase flag and
//     maturity of the coin.
//
// The chain state names the snapshot's block as the tip; the store holds
// no block metadata at or below it, so that block cannot be disconnected.
// Blocks connected on top of it are the store's as usual.

// SnapshotBase is the block a UTXO snapshot is the set after.
type SnapshotBase struct {
	Hash   chainhash.Hash
	Height uint32
	// Txs is the number of transactions of the chain up to the block, when
	// the snapshot says (Teranode's headers file); 0 when it does not
	// (Core's), and the store's count then starts after the block.
	Txs uint64
}

// SnapshotLoader fills an empty store with the coins of a UTXO snapshot.
// Finish makes the store's tip the snapshot's block; until then the store
// has no tip, and a loader that fails leaves it for its caller to discard.
type SnapshotLoader struct {
	db      *DB
	base    SnapshotBase
	pending []engine.Update
	// stats are the loaded set's statistics, the chain state's at Finish.
	stats   coinstats.Stats
	records int
}

// loadBatchRecords is how many records the loader hands the engine at once.
const loadBatchRecords = 4096

// ErrStoreNotEmpty is LoadSnapshot's refusal of a store that holds a
// block or a transaction already.
var ErrStoreNotEmpty = errors.New("the store is not empty: a snapshot loads into a new store")

// SnapshotCoinError is a coin of a snapshot that cannot be one: of a
// height above the snapshot's block, of an output the snapshot gives
// twice, or among another transaction's coins; or one a store cannot
// hold, at an output index above record.MaxWrapperIndex.
type SnapshotCoinError struct {
	Outpoint coinstats.Outpoint
	Reason   string
}

func (e *SnapshotCoinError) Error() string {
	return fmt.Sprintf("snapshot coin %s: %s", e.Outpoint, e.Reason)
}

// unminedSpenders returns the transactions the store holds unmined: an
// output only such a transaction spends is still in the chain's set
// (Bitcoin Core's holds no mempool spend). They are read up front from the
// unmined index, since a walk of the records may not call back into the
// engine, and the mempool is small beside the set.
func (db *DB) unminedSpenders(ctx context.Context) (map[chainhash.Hash]bool, error) {
	txids, err := db.scanUnmined(ctx, 1, ^uint32(0))
	if err != nil {
		return nil, err
	}
	unmined := make(map[chainhash.Hash]bool, len(txids))
	for _, id := range txids {
		unmined[id] = true
	}
	return unmined, nil
}

// LoadSnapshot starts loading a snapshot of the chain up to base into the
// store, which must be empty: no tip and no record.
func (db *DB) LoadSnapshot(ctx context.Context, base SnapshotBase) (*SnapshotLoader, error) {
	cs, err := db.loadChainState(ctx)
	if err != nil {
		return nil, err
	}
	if cs.HasTip {
		return nil, fmt.Errorf("%w: its tip is block %s at height %d", ErrStoreNotEmpty, cs.TipHash, cs.TipHeight)
	}
	errFound := errors.New("found")
	err = db.eng.ForEach(ctx, func(engine.Key, []byte) error { return errFound })
	if errors.Is(err, errFound) {
		return nil, fmt.Errorf("%w: it holds records", ErrStoreNotEmpty)
	}
	if err != nil {
		return nil, storageErr("reading the store", err)
	}
	return &SnapshotLoader{db: db, base: base}, nil
}

// Add stores one transaction of the snapshot: its coins, in ascending vout
// order, all of one txid, height and coinbase flag. Its records are
// written with the next batch; a transaction stored already fails then
// with TX_EXISTS.
func (l *SnapshotLoader) Add(ctx context.Context, coins []coinstats.Coin) error {
	recs, err := l.build(coins)
	if err != nil {
		return err
	}
	for i := range coins {
		l.stats.Add(&coins[i])
	}
	for _, r := range recs {
		value, t, txid := r.Encode(), r.Terms(), r.TxID
		l.pending = append(l.pending, engine.Update{Key: engine.Key(record.RecordKey(r.TxID, r.Index)), Fn: func(current []byte) (engine.Mutation, error) {
			if current != nil {
				return engine.Mutation{}, txExists(txid)
			}
			return engine.Mutation{Action: engine.Put, Value: value, Terms: t}, nil
		}})
	}
	l.records += len(recs)
	if len(l.pending) >= loadBatchRecords {
		return l.flush(ctx)
	}
	return nil
}

// build turns a transaction's coins into its records.
func (l *SnapshotLoader) build(coins []coinstats.Coin) ([]*record.Record, error) {
	if len(coins) == 0 {
		return nil, errors.New("snapshot: a transaction with no coins")
	}
	first := &coins[0]
	// Every coin is checked before the hashes are sized by the last one's
	// vout: in order and bounded, that is the highest.
	for i := range coins {
		c := &coins[i]
		switch {
		case c.TxID != first.TxID || c.Height != first.Height || c.Coinbase != first.Coinbase:
			return nil, &SnapshotCoinError{c.Outpoint, fmt.Sprintf("among the coins of %s, at height %d, coinbase %v, but at height %d, coinbase %v",
				first.TxID, first.Height, first.Coinbase, c.Height, c.Coinbase)}
		case i > 0 && c.Vout <= coins[i-1].Vout:
			return nil, &SnapshotCoinError{c.Outpoint, fmt.Sprintf("after output %d: given twice or out of order", coins[i-1].Vout)}
		case c.Vout > record.MaxWrapperIndex:
			return nil, &SnapshotCoinError{c.Outpoint, fmt.Sprintf("output index %d is above %d, the highest a store holds", c.Vout, record.MaxWrapperIndex)}
		case c.Height > l.base.Height:
			return nil, &SnapshotCoinError{c.Outpoint, fmt.Sprintf("created at height %d, above the snapshot's block at %d", c.Height, l.base.Height)}
		}
	}
	wrapper := record.UTXOWrapper{TxID: first.TxID, Height: first.Height, Coinbase: first.Coinbase}
	hashes := make([]*chainhash.Hash, coins[len(coins)-1].Vout+1)
	values := make([]chainhash.Hash, len(coins))
	for i := range coins {
		c := &coins[i]
		values[i] = chainhash.Hash(chain.UTXOHash(c.TxID, c.Vout, c.Script, c.Value))
		hashes[c.Vout] = &values[i]
		wrapper.UTXOs = append(wrapper.UTXOs, record.WrappedUTXO{Index: c.Vout, Value: c.Value, Script: c.Script})
	}
	outputs, err := wrapper.Bytes()
	if err != nil {
		return nil, err
	}
	db := l.db
	return record.Build(record.BuildParams{
		TxID:          first.TxID,
		UtxoHashes:    hashes,
		Tx:            outputs,
		OutputsOnly:   true,
		IsCoinbase:    first.Coinbase,
		BatchSize:     db.opts.UtxoBatchSize,
		MinedBlocks:   []model.MinedBlockInfo{{BlockID: 0, BlockHeight: first.Height, OnLongestChain: true}},
		CurrentHeight: first.Height,
		CreatedAt:     db.opts.Now().UnixMilli(),
		Retention:     db.opts.BlockHeightRetention,
	})
}

// flush writes the pending records, their syncs deferred to Finish's.
func (l *SnapshotLoader) flush(ctx context.Context) error {
	if len(l.pending) == 0 {
		return nil
	}
	errs, err := l.db.eng.Update(engine.DeferSync(ctx), l.pending)
	if err != nil {
		return storageErr("loading the snapshot", err)
	}
	l.pending = l.pending[:0]
	return errors.Join(errs...)
}

// Summary is the statistics of the coins added so far (without
// hash_serialized_3, which needs them in outpoint order): those Finish
// keeps as the store's.
func (l *SnapshotLoader) Summary() coinstats.Summary { return l.stats.Finalize() }

// Records is the number of records added so far.
func (l *SnapshotLoader) Records() int { return l.records }

// Finish writes what is pending and makes the snapshot's block the
// store's tip, durably.
func (l *SnapshotLoader) Finish(ctx context.Context) error {
	if err := l.flush(ctx); err != nil {
		return err
	}
	db := l.db
	db.chainMu.Lock()
	defer db.chainMu.Unlock()
	// Of the snapshot's block the store knows only its hash: it was never
	// connected, so it cannot be disconnected either.
	stats, err := l.stats.MarshalBinary()
	if err != nil {
		return err
	}
	cs := chainState{Height: l.base.Height, HasTip: true, TipHeight: l.base.Height, TipHash: l.base.Hash,
		NextBlockID: 1, Blocks: uint64(l.base.Height) + 1, Txs: l.base.Txs, First: l.base.Height + 1, TipBlock: &connectedBlock{Hash: l.base.Hash}, Stats: stats}
	if err := db.advanceHeight(ctx, cs.Height); err != nil {
		return err
	}
	if err := db.saveChainState(ctx, cs); err != nil {
		return err
	}
	return storageErr("checkpoint", db.eng.Checkpoint(ctx, cs.Height))
}

// ForEachCoin calls fn with every unspent output of the UTXO set of the
// longest chain (see Summary), in no particular order, with the height and
// coinbase flag of its transaction. The coin is fn's only for the call.
//
// Besides the outputs the store keeps, it gives those it leaves out by its
// data-carrier rule (StoredAsUTXO: zero value, a script that starts OP_FALSE
// OP_RETURN), which nothing can spend but Bitcoin Core's set holds, so that
// a walk of the set agrees with Core's and with the statistics the block
// path keeps (SetStats).
//
// An output spent by a transaction the store does not hold (a Spend whose
// transaction was never created) counts as spent: telling such a spender
// from a chain transaction would take a read of every spender. Verify
// finds them (DanglingSpendsError).
func (db *DB) ForEachCoin(ctx context.Context, fn func(*coinstats.Coin) error) error {
	unmined, err := db.unminedSpenders(ctx)
	if err != nil {
		return err
	}
	return db.forEachCoin(ctx, func(_ *record.Record, _ *coinstats.Coin, sd model.SpendingData) bool { return unmined[sd.TxID] }, fn)
}

// forEachCoin is ForEachCoin, with a spent output c of r counting as
// unspent where undone says so.
func (db *DB) forEachCoin(ctx context.Context, undone func(r *record.Record, c *coinstats.Coin, sd model.SpendingData) bool, fn func(*coinstats.Coin) error) error {
	var c coinstats.Coin
	return db.walkSet(ctx, func(r *record.Record, st *setTx) error {
		for offset, e := range r.Utxos {
			vout := r.FirstVout + uint32(offset)
			if !e.Stored() && (r.OutputsOnly || int(vout) >= len(st.tx.Msg.TxOut) || StoredAsUTXO(st.tx.Msg.TxOut[vout])) {
				continue
			}
			if int(vout) >= len(st.tx.Msg.TxOut) {
				return fmt.Errorf("record of %s names output %d of %d", r.TxID, vout, len(st.tx.Msg.TxOut))
			}
			out := st.tx.Msg.TxOut[vout]
			c = coinstats.Coin{Outpoint: coinstats.Outpoint{TxID: r.TxID, Vout: vout}, Height: st.height,
				Coinbase: st.coinbase, Value: uint64(out.Value), Script: out.PkScript}
			if sd, spent := e.SpendingData(); spent && !undone(r, &c, sd) {
				continue
			}
			if err := fn(&c); err != nil {
				return err
			}
		}
		return nil
	})
}
