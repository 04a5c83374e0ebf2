package utxo

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/model"
	"github.com/utxostore/utxostore/utxo/record"
)

// Block is a block to connect or disconnect.
type Block struct {
	Hash     chainhash.Hash
	PrevHash chainhash.Hash
	Height   uint32
	// Txs are the block's transactions, for a block held in memory.
	Txs []*chain.Tx
	// Chunks, for a block too large to hold in memory (Txs is nil then),
	// reads the block's transactions, in order, a chunk at a time, calling
	// fn on each chunk until fn fails. The store reads the block once per
	// step (create, spend, set mined), so memory holds one chunk, plus the
	// few dozen bytes per transaction a step keeps (its txid).
	Chunks func(fn func(txs []*chain.Tx) error) error
	// Header and Size, when known, are kept with the block's metadata for
	// queries (BlockAt); the store does not need them.
	Header *wire.BlockHeader
	Size   int64
}

// EachChunk calls fn with the block's transactions in order: Txs as one
// chunk, or the chunks Chunks reads.
func (b Block) EachChunk(fn func(txs []*chain.Tx) error) error {
	if b.Chunks != nil {
		return b.Chunks(fn)
	}
	return fn(b.Txs)
}

// errEnough stops an EachChunk walk that has read what it needs.
var errEnough = errors.New("enough chunks")

// setMinedBatch bounds the transactions of one setMined call of a block,
// so a block of millions of transactions is marked in parts.
const setMinedBatch = 1 << 16

// BlockFromChain wraps a parsed block at height.
func BlockFromChain(b *chain.Block, height uint32) Block {
	header := b.Header
	return Block{Hash: b.Hash, PrevHash: b.PrevHash(), Height: height, Txs: b.Txs, Header: &header, Size: b.Size}
}

// ErrNotTip is returned when a block does not extend the store's tip, or a
// disconnected block is not the tip.
var ErrNotTip = errors.New("block does not match the store's tip")

// ConnectBlock applies a block on top of the store's tip: it creates the
// block's transactions (a transaction already stored unmined is marked mined,
// not re-created), spends their inputs, marks them mined on the longest
// chain and advances the height. An unmined transaction that spent an output
// this block spends, and all its descendants, become conflicting; a
// conflicting transaction the block mines stops being one. The block
// is a unit: if one of its spends is refused, everything it changed is
// undone and the error says which input failed.
//
// The block is also the unit of durability: its writes defer their sync
// (engine.DeferSync) and the chain state write that ends it makes them all
// durable with one sync. A crash before then leaves the tip on the block
// before and any part of this block's writes, which connecting it again
// completes: each of its steps is idempotent.
func (db *DB) ConnectBlock(ctx context.Context, b Block) error {
	db.chainMu.Lock()
	defer db.chainMu.Unlock()
	if db.stats != nil {
		if err := db.stats.err(); err != nil {
			return fmt.Errorf("the store refuses blocks until it is reopened: %w", err)
		}
	}
	if b.Chunks != nil {
		// A block read in chunks is worked out in place, after the blocks
		// before it.
		if err := db.commitStats(ctx); err != nil {
			return err
		}
	}
	cs, err := db.loadChainState(ctx)
	if err != nil {
		return err
	}
	if err := cs.summary().CheckExtends(b.Hash, b.PrevHash, b.Height); err != nil {
		return err
	}
	if err := db.connectBlock(engine.DeferSync(ctx), b, &cs); err != nil {
		return errors.Join(err, db.settleFailed(ctx, cs))
	}
	if err := db.finishBlock(ctx, cs, b.Height); err != nil {
		return err
	}
	// The chain state names the block's losers now.
	if err := db.forgetBlockLosers(ctx, b.Hash, cs.TipBlock.Conflicting); err != nil {
		return err
	}
	if b.Chunks == nil && db.stats != nil {
		// A failure to queue is the worker's, which the next block hears.
		_ = db.stats.submit(statsJob{height: b.Height, hash: b.Hash, txs: b.Txs, size: txsSize(b)})
	}
	return nil
}

// txsSize is what a block's transactions take in memory, about.
func txsSize(b Block) int {
	if b.Size > 0 {
		return int(b.Size)
	}
	n := 0
	for _, tx := range b.Txs {
		n += len(tx.Raw)
	}
	return n
}

// settleFailed makes durable whatever a block that failed left behind (for
// a refused block, its undo): the caller is told where the store stands,
// and a crash must not bring the block's deferred writes back. The tip is
// still cs's, so this is its block boundary.
func (db *DB) settleFailed(ctx context.Context, cs chainState) error {
	return storageErr("checkpoint", db.eng.Checkpoint(ctx, cs.Height))
}

// connectBlock applies the block's transactions and metadata with ctx and
// advances cs to it; finishBlock records cs.
func (db *DB) connectBlock(ctx context.Context, b Block, cs *chainState) error {
	info := model.MinedBlockInfo{BlockID: cs.NextBlockID, BlockHeight: b.Height, OnLongestChain: true}
	var created, toMine []chainhash.Hash
	txCount := 0
	err := b.EachChunk(func(txs []*chain.Tx) error {
		txCount += len(txs)
		c, minedAlready, err := db.createBlockTxs(ctx, txs, b.Height, info)
		created = append(created, c...)
		// A transaction this block created in one record was created
		// mined in it, with the rule set-mined runs: setting it mined
		// again would change nothing.
		for _, tx := range txs {
			if !minedAlready[tx.ID] {
				toMine = append(toMine, tx.ID)
			}
		}
		return err
	})
	if err != nil {
		return errors.Join(err, db.dropCreated(ctx, created))
	}
	if err := db.spendBlockInputs(ctx, b, toMine); err != nil {
		return errors.Join(err, db.dropCreated(ctx, created))
	}
	conflicting, err := db.blockLosers(ctx, b.Hash)
	if err != nil {
		return err
	}
	// A transaction the store held as conflicting (the loser of a race
	// for an input, as a validator stores it) that the block mines is the
	// winner: it stops being conflicting, as Teranode's ProcessConflicting
	// unmarks its winners, or its outputs would refuse every spend and be
	// deleted at its delete-at-height.
	var winners []chainhash.Hash
	noteWinner := func(txid chainhash.Hash, after *record.Record) {
		if after.Conflicting {
			winners = append(winners, txid)
		}
	}
	for len(toMine) > 0 {
		n := min(len(toMine), setMinedBatch)
		if err := db.setMined(ctx, toMine[:n], info, noteWinner); err != nil {
			return err
		}
		toMine = toMine[n:]
	}
	if len(winners) > 0 {
		if _, _, err := db.setConflicting(ctx, winners, false); err != nil {
			return err
		}
	}
	// The block's change to the set's statistics: a block held in memory
	// leaves it to the stats worker, a block read in chunks is worked out
	// now, with no block pending below it (ConnectBlock).
	if b.Chunks == nil {
		if err := db.putPending(ctx, b); err != nil {
			return err
		}
		cs.StatsBehind++
	} else {
		delta, err := db.statsOf(ctx, b, false)
		if err != nil {
			return err
		}
		if err := cs.applyStats(&delta, false); err != nil {
			return err
		}
	}
	connected := &connectedBlock{Hash: b.Hash, PrevHash: b.PrevHash, ID: info.BlockID, Txs: txCount, Size: b.Size, Conflicting: conflicting}
	if h := b.Header; h != nil {
		connected.Time, connected.Version, connected.Bits, connected.Nonce = h.Timestamp.Unix(), h.Version, h.Bits, h.Nonce
		connected.MerkleRoot = &h.MerkleRoot
	}
	// The block before becomes a record of its own, and this block's
	// metadata goes into the chain state that finishBlock writes last.
	if cs.HasTip {
		if err := db.saveBlock(ctx, cs.TipHeight, cs.TipBlock); err != nil {
			return err
		}
	}
	if !cs.HasTip {
		cs.First = b.Height
	}
	cs.HasTip, cs.TipHeight, cs.TipHash, cs.TipBlock = true, b.Height, b.Hash, connected
	cs.NextBlockID++
	cs.Blocks++
	cs.Txs += uint64(txCount)
	return nil
}

// finishBlock ends a block: it reaches the block's height, running the
// work that makes due (advanceHeight; its writes deferred like the
// block's), then records the new chain state with the height in it. That
// write is the block's last and its only durable one (one write, so the
// tip and the height never disagree after a crash, and durable, so every
// write of the block before it is too). Checkpoint then marks the block
// boundary, with nothing left to sync.
func (db *DB) finishBlock(ctx context.Context, cs chainState, height uint32) (err error) {
	defer func() {
		if err != nil && db.stats != nil {
			db.stats.poison(err)
		}
	}()
	work := engine.DeferSync(ctx)
	if err := db.advanceHeight(work, height); err != nil {
		return err
	}
	cs.Height = height
	folded, err := db.foldStats(&cs, false)
	if err != nil {
		return err
	}
	if err := db.saveChainState(ctx, cs); err != nil {
		return err
	}
	if err := db.dropFolded(work, folded); err != nil {
		return err
	}
	return storageErr("checkpoint", db.eng.Checkpoint(ctx, height))
}

// createBlockTxs creates transactions of the block at height (a chunk of
// them, or all) as mined in it. Those that fit one record go in one engine
// batch; larger ones through Create. A transaction already stored
// (submitted before its block, seen unmined, or connected before a crash)
// is left for SetMinedMulti, and its records are never built: on a node
// that saw the transactions first, that is almost every transaction of the
// block. It returns the transactions it created, also when it fails (the
// caller drops them), and, among them, those created in one record, which
// are mined in the block as they are.
func (db *DB) createBlockTxs(ctx context.Context, txs []*chain.Tx, height uint32, info model.MinedBlockInfo) (created []chainhash.Hash, minedAlready map[chainhash.Hash]bool, err error) {
	var updates []engine.Update
	var single []*chain.Tx
	opts := CreateOptions{MinedBlocks: []model.MinedBlockInfo{info}}
	for _, tx := range txs {
		if !db.fitsOneRecord(tx) {
			_, err := db.Create(ctx, tx, height, WithMinedBlockInfo(info))
			switch {
			case err == nil:
				created = append(created, tx.ID)
			case !errors.Is(err, model.ErrTxExists):
				return created, nil, err
			}
			continue
		}
		// Built at most once, and only when the record is missing; an
		// optimistic engine may call the update again.
		var built *engine.Mutation
		var buildErr error
		updates = append(updates, engine.Update{Key: engine.Key(record.MasterKey(tx.ID)), Fn: func(current []byte) (engine.Mutation, error) {
			if current != nil {
				return engine.Mutation{}, errAlreadyCommitted
			}
			if built == nil && buildErr == nil {
				var recs []*record.Record
				if recs, _, buildErr = db.buildRecords(tx, height, opts); buildErr == nil {
					built = &engine.Mutation{Action: engine.Put, Value: recs[0].Encode(), Terms: recs[0].Terms()}
				}
			}
			if buildErr != nil {
				return engine.Mutation{}, buildErr
			}
			return *built, nil
		}})
		single = append(single, tx)
	}
	errs, err := db.eng.Update(ctx, updates)
	if err != nil {
		return created, nil, storageErr("creating the block's transactions", err)
	}
	minedAlready = make(map[chainhash.Hash]bool, len(single))
	for i, tx := range single {
		switch {
		case errs[i] == nil:
			created = append(created, tx.ID)
			minedAlready[tx.ID] = true
		case !errors.Is(errs[i], errAlreadyCommitted):
			return created, nil, errs[i]
		}
	}
	return created, minedAlready, nil
}

// dropCreated undoes createBlockTxs for a block that failed.
func (db *DB) dropCreated(ctx context.Context, txids []chainhash.Hash) error {
	var errs []error
	for _, txid := range txids {
		if err := db.deleteTx(ctx, txid, false); err != nil && !errors.Is(err, model.ErrTxNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// spendBlockInputs spends every input of the block, a chunk at a time. An
// output already spent by a transaction that is not mined on the longest
// chain loses to the block: that transaction and its descendants become
// conflicting (blockLosers lists them), their spends are undone, and the
// block's spend is applied. So does an output spent by a transaction the
// store does not hold (spent, and never created): that spend is undone. A
// transaction the store held as conflicting that the block mines (one of
// stored, its transactions stored before it) wins, and stops being
// conflicting before its outputs are spent. When a chunk fails, the
// chunks before it are undone too, the losers restored, the spends
// undone applied again and the winners conflicting again: the block
// spends all or nothing.
func (db *DB) spendBlockInputs(ctx context.Context, b Block, stored []chainhash.Hash) error {
	mined := blockMines{stored: stored}
	var done settlement // of every chunk, but its losers (blockLosers)
	spent := 0          // chunks whose spends are applied
	err := b.EachChunk(func(txs []*chain.Tx) error {
		if err := db.spendChunkInputs(ctx, txs, b, &mined, &done); err != nil {
			return err
		}
		spent++
		return nil
	})
	if err == nil {
		return nil
	}
	undo := db.unspendChunks(ctx, b, spent)
	losers, err2 := db.blockLosers(ctx, b.Hash)
	if err2 == nil {
		// The losers first: one that spent a winner's output (as a
		// client ignoring the conflict may) takes it back before the
		// winner is conflicting again, as it held it before the block.
		err2 = errors.Join(db.restoreConflicting(ctx, losers), db.forgetBlockLosers(ctx, b.Hash, losers))
	}
	if len(done.released) > 0 {
		err2 = errors.Join(err2, db.spendAll(ctx, done.released, SpendOptions{BlockHeight: db.height.Load() + 1, IgnoreLocked: true}))
	}
	if len(done.winners) > 0 {
		_, _, err3 := db.setConflicting(ctx, done.winners, true)
		err2 = errors.Join(err2, err3)
	}
	return errors.Join(err, undo, err2)
}

// blockMines answers whether a block mines a transaction the store held
// before it, from the list connectBlock keeps, made a set on the first
// question: only a block whose spends meet a conflicting parent asks.
type blockMines struct {
	stored []chainhash.Hash
	set    map[chainhash.Hash]bool
}

func (m *blockMines) has(txid chainhash.Hash) bool {
	if m.set == nil {
		m.set = make(map[chainhash.Hash]bool, len(m.stored))
		for _, id := range m.stored {
			m.set[id] = true
		}
	}
	return m.set[txid]
}

// settlement is what a block did to take the outputs its spends were
// refused: the losers it made conflicting, the conflicting transactions
// it mines that it made winners, and the spends it undid of transactions
// the store does not hold.
type settlement struct {
	losers, winners []chainhash.Hash
	released        []*Spend
}

// spendChunkInputs spends the inputs of a chunk of block b, all or
// nothing. The refusals the block settles (settleRefusals) are settled
// and the chunk spent again, until it is spent or a refusal cannot be
// settled. It adds the winners and the spends undone to done, also when
// it fails.
func (db *DB) spendChunkInputs(ctx context.Context, txs []*chain.Tx, b Block, mined *blockMines, done *settlement) error {
	spends, err := chunkSpends(txs)
	if err != nil {
		return err
	}
	opts := SpendOptions{BlockHeight: b.Height, IgnoreLocked: true}
	settled := make(map[chainhash.Hash]bool)
	for {
		err := db.spendAll(ctx, spends, opts)
		if err == nil {
			return nil
		}
		s, err := db.settleRefusals(ctx, spends, err, mined, settled)
		if err != nil {
			return err
		}
		if len(s.released) > 0 {
			done.released = append(done.released, s.released...)
			if err := db.unspendAll(ctx, s.released, false); err != nil {
				return err
			}
		}
		if len(s.losers) > 0 {
			if err := db.markConflicting(ctx, s.losers, b.Hash); err != nil {
				return err
			}
		}
		if len(s.winners) > 0 {
			done.winners = append(done.winners, s.winners...)
			if _, _, err := db.setConflicting(ctx, s.winners, false); err != nil {
				return err
			}
		}
	}
}

// chunkSpends lists the outputs the transactions of a chunk spend, in
// their order.
func chunkSpends(txs []*chain.Tx) ([]*Spend, error) {
	var spends []*Spend
	for _, tx := range txs {
		s, err := spendsOf(tx, nil)
		if err != nil {
			return nil, err
		}
		spends = append(spends, s...)
	}
	return spends, nil
}

// unspendChunks undoes the spends of the block's first n chunks.
func (db *DB) unspendChunks(ctx context.Context, b Block, n int) error {
	done := 0
	err := b.EachChunk(func(txs []*chain.Tx) error {
		if done == n {
			return errEnough
		}
		done++
		spends, err := chunkSpends(txs)
		if err != nil {
			return err
		}
		return db.unspendAll(ctx, spends, false)
	})
	if errors.Is(err, errEnough) {
		return nil
	}
	return err
}

// settleRefusals sorts the refused spends of a block: an output held by a
// transaction not mined on the longest chain names a loser, one held by a
// transaction the store does not hold a spend to undo, and an output of a
// conflicting transaction the block mines names a winner. Each of those
// transactions is settled once (settled remembers them across calls). Any
// other refusal, or none the block can settle, is returned as the block's
// error, which is failure when there is no other.
func (db *DB) settleRefusals(ctx context.Context, spends []*Spend, failure error, mined *blockMines, settled map[chainhash.Hash]bool) (settlement, error) {
	var s settlement
	now := make(map[chainhash.Hash]bool) // settled by this call
	for _, sp := range spends {
		if sp.Err == nil {
			continue
		}
		refused := func(why string) error {
			return fmt.Errorf("input %s:%d of %s%s: %w", sp.TxID, sp.Vout, sp.SpendingData.TxID, why, sp.Err)
		}
		switch {
		case errors.Is(sp.Err, model.ErrConflicting):
			if !mined.has(sp.TxID) {
				return settlement{}, refused(" spends an output of a conflicting transaction the block does not mine")
			}
			if !settled[sp.TxID] && !now[sp.TxID] {
				now[sp.TxID] = true
				s.winners = append(s.winners, sp.TxID)
			}
		case errors.Is(sp.Err, model.ErrSpent) && sp.ConflictingTxID != nil:
			holder := *sp.ConflictingTxID
			if settled[holder] {
				continue
			}
			meta, err := db.Get(ctx, holder, FieldOutputs)
			switch {
			case errors.Is(err, model.ErrTxNotFound):
				// Mined and since pruned: the chain's spend.
				pruned, err := db.prunedSpender(ctx, sp.TxID, sp.Vout, holder)
				if err != nil {
					return settlement{}, err
				}
				if pruned {
					return settlement{}, refused(fmt.Sprintf(" double spends %s, mined on the longest chain and since pruned", holder))
				}
				// Spent, and never created (a validator stopped between
				// the two): no chain holds it, and nothing descends from
				// it in the store.
				held, err := db.GetSpend(ctx, &Spend{TxID: sp.TxID, Vout: sp.Vout})
				if err != nil {
					return settlement{}, err
				}
				if held.SpendingData != nil && held.SpendingData.TxID == holder {
					s.released = append(s.released, &Spend{TxID: sp.TxID, Vout: sp.Vout, SpendingData: held.SpendingData})
				}
				now[holder] = true
			case err != nil:
				return settlement{}, fmt.Errorf("input %s:%d of %s is spent by %s, which cannot be read: %w", sp.TxID, sp.Vout, sp.SpendingData.TxID, holder, err)
			case meta.UnminedSince == 0 && len(meta.BlockIDs) > 0:
				return settlement{}, refused(" double spends a transaction mined on the longest chain")
			case !now[holder]:
				now[holder] = true
				s.losers = append(s.losers, holder)
			}
		default:
			return settlement{}, refused("")
		}
	}
	for txid := range now {
		settled[txid] = true
	}
	if len(s.losers) == 0 && len(s.winners) == 0 && len(s.released) == 0 {
		return settlement{}, failure
	}
	return s, nil
}

// prunedSpender reports whether txid, which spends output vout of parent
// and is not stored, is among the deleted children of the record holding
// that output: mined, fully spent and pruned, its spend is the chain's.
func (db *DB) prunedSpender(ctx context.Context, parent chainhash.Hash, vout uint32, txid chainhash.Hash) (bool, error) {
	key := engine.Key(record.RecordKey(parent, record.RecordIndex(vout, db.opts.UtxoBatchSize)))
	found, err := db.readRecords(ctx, []engine.Key{key})
	switch {
	case err != nil:
		return false, err
	case errors.Is(found[0].err, errMissing):
		return false, nil
	case found[0].err != nil:
		return false, found[0].err
	}
	return slices.Contains(found[0].rec.DeletedChildren, txid), nil
}

// markConflicting marks the transactions and all their descendants (found
// through the spending data of their outputs) conflicting, and undoes their
// spends so the winning spends of block can take the outputs. They are
// added to the block's losers first, parents before children.
func (db *DB) markConflicting(ctx context.Context, roots []chainhash.Hash, block chainhash.Hash) error {
	order, err := db.withDescendants(ctx, roots)
	if err != nil {
		return err
	}
	if err := db.addBlockLosers(ctx, block, order); err != nil {
		return err
	}
	return db.setConflictingReleasing(ctx, order)
}

// withDescendants returns roots and every transaction spending their
// outputs, theirs and so on, parents before children. A spender the store
// does not hold (a Spend whose transaction was never created) is left out:
// there is nothing to mark, and its spends of a loser's outputs stay as
// they are, as the loser's other outputs do.
func (db *DB) withDescendants(ctx context.Context, roots []chainhash.Hash) ([]chainhash.Hash, error) {
	return db.walk(ctx, roots, map[chainhash.Hash]bool{}, spendersOf)
}

// setConflictingReleasing marks txids conflicting and undoes their
// spends: a conflicting transaction holds no output.
func (db *DB) setConflictingReleasing(ctx context.Context, txids []chainhash.Hash) error {
	spends, _, err := db.setConflicting(ctx, txids, true)
	if err != nil {
		return err
	}
	if err := db.unspendAll(ctx, spends, false); err != nil && !errors.Is(err, model.ErrTxNotFound) {
		return err
	}
	return nil
}

// blockLosersName is the metadata listing the transactions that connecting
// the block made conflicting, written before they are marked. A block
// connected again after a failure or a crash finds its spends in place and
// its losers marked, so that attempt sees no double spend: it learns them
// from here, and its chain state entry (connectedBlock.Conflicting) still
// names every one, for its disconnection to restore. The entry goes once
// the block is connected, refused or disconnected.
func blockLosersName(block chainhash.Hash) string { return "block-losers/" + block.String() }

// blockLosers lists, once each and in the order they were marked, the
// transactions the block's connection made conflicting.
func (db *DB) blockLosers(ctx context.Context, block chainhash.Hash) ([]chainhash.Hash, error) {
	raw, err := db.eng.GetMeta(ctx, blockLosersName(block))
	if err != nil {
		return nil, storageErr("reading the block's losers", err)
	}
	if len(raw)%chainhash.HashSize != 0 {
		return nil, fmt.Errorf("the store's list of the transactions block %s made conflicting is damaged (%d bytes, not a whole number of transaction ids): the store is damaged", block, len(raw))
	}
	var losers []chainhash.Hash
	seen := make(map[chainhash.Hash]bool)
	for ; len(raw) > 0; raw = raw[chainhash.HashSize:] {
		if h := chainhash.Hash(raw[:chainhash.HashSize]); !seen[h] {
			seen[h] = true
			losers = append(losers, h)
		}
	}
	return losers, nil
}

// addBlockLosers adds txids to the block's losers.
func (db *DB) addBlockLosers(ctx context.Context, block chainhash.Hash, txids []chainhash.Hash) error {
	raw, err := db.eng.GetMeta(ctx, blockLosersName(block))
	if err != nil {
		return storageErr("reading the block's losers", err)
	}
	for _, txid := range txids {
		raw = append(raw, txid[:]...)
	}
	return storageErr("noting the block's losers", db.eng.PutMeta(ctx, blockLosersName(block), raw))
}

// forgetBlockLosers drops the block's list of losers, when it has one.
func (db *DB) forgetBlockLosers(ctx context.Context, block chainhash.Hash, losers []chainhash.Hash) error {
	if len(losers) == 0 {
		return nil
	}
	return storageErr("forgetting the block's losers", db.eng.PutMeta(ctx, blockLosersName(block), nil))
}

// restoreConflicting reverses markConflicting when the block that caused it
// is disconnected: the transactions are no longer conflicting and take back
// the outputs they spent, parents first. One that cannot, because another
// transaction took one of its outputs meanwhile (markConflicting released
// all its inputs, not only the one the block took) or its parent stays
// conflicting, stays conflicting: it lost to that one now. One deleted
// since, at its delete-at-height, has nothing to restore.
func (db *DB) restoreConflicting(ctx context.Context, txids []chainhash.Hash) error {
	items := make([]*UnresolvedMetaData, len(txids))
	for i, txid := range txids {
		items[i] = &UnresolvedMetaData{TxID: txid}
	}
	if err := db.BatchDecorate(ctx, items, FieldTx); err != nil {
		return err
	}
	txids = nil
	var txs []*chain.Tx // of txids, which the marks below leave as they are
	for _, it := range items {
		switch {
		case it.Err == nil:
			txids, txs = append(txids, it.TxID), append(txs, it.Meta.Tx)
		case !errors.Is(it.Err, model.ErrTxNotFound):
			return it.Err
		}
	}
	if len(txids) == 0 {
		return nil
	}
	if _, _, err := db.setConflicting(ctx, txids, false); err != nil {
		return err
	}
	for i, txid := range txids {
		spends, err := spendsOf(txs[i], nil)
		if err != nil {
			return err
		}
		err = db.spendAll(ctx, spends, SpendOptions{BlockHeight: db.height.Load() + 1, IgnoreLocked: true})
		if errors.Is(err, model.ErrSpent) || errors.Is(err, model.ErrConflicting) {
			if _, _, err := db.setConflicting(ctx, []chainhash.Hash{txid}, true); err != nil {
				return fmt.Errorf("restoring %s after its conflict was reversed, it stays conflicting: %w", txid, err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("restoring %s after its conflict was reversed: %w", txid, err)
		}
	}
	return nil
}

// DisconnectBlock removes the tip block b: its transactions lose the block
// and return to unmined, holding their inputs as unmined transactions do
// (its coinbase, which cannot come back, is deleted); the transactions it
// made conflicting are restored, taking back their inputs, and a
// transaction of the block that loses one to them becomes conflicting; the
// height goes back by one.
func (db *DB) DisconnectBlock(ctx context.Context, b Block) error {
	db.chainMu.Lock()
	defer db.chainMu.Unlock()
	// The blocks pending are folded into the chain state's statistics
	// first, and durably: a crash in the undo below must not leave a
	// pending block whose transactions the undo took away, as the store
	// would work it out again when it reopens.
	if err := db.commitStats(ctx); err != nil {
		return err
	}
	cs, err := db.loadChainState(ctx)
	if err != nil {
		return err
	}
	if cs.StatsBehind > 0 { // left pending: a store opened read-only has no worker to fold them
		return fmt.Errorf("a store opened read-only cannot disconnect blocks")
	}
	if !cs.HasTip || cs.TipHeight != b.Height || cs.TipHash != b.Hash {
		return fmt.Errorf("%w: cannot disconnect block %s at height %d; the tip is %s at height %d", ErrNotTip, b.Hash, b.Height, cs.TipHash, cs.TipHeight)
	}
	connected, err := db.blockOf(ctx, cs, b.Height)
	if err != nil {
		return err
	}
	if connected.ID == 0 {
		return fmt.Errorf("%w: block %s at height %d is the snapshot the store was loaded from, never connected to it, so it cannot be disconnected", errNoBlock, b.Hash, b.Height)
	}
	// The block's change to the set's statistics is worked out again,
	// before the undo changes what it reads, and taken away.
	delta, err := db.statsOf(ctx, b, true)
	if err != nil {
		return err
	}
	failed := func(err error) error {
		return errors.Join(err, db.settleFailed(ctx, cs))
	}
	// The block below becomes the tip: its metadata moves into the chain
	// state. It is read before anything changes.
	var newTip *connectedBlock
	if b.Height > 0 {
		if newTip, err = db.loadBlock(ctx, b.Height-1); err != nil {
			return err
		}
	}
	work := engine.DeferSync(ctx)
	if err := db.disconnectBlock(work, b, connected); err != nil {
		return failed(err)
	}
	cs.Blocks--
	cs.Txs -= uint64(connected.Txs)
	if err := cs.applyStats(&delta, true); err != nil {
		return failed(err)
	}
	below := uint32(0)
	if b.Height == 0 {
		cs.HasTip, cs.TipHash, cs.TipBlock = false, chainhash.Hash{}, nil
	} else {
		cs.TipHeight, cs.TipHash, cs.TipBlock, below = b.Height-1, connected.PrevHash, newTip, b.Height-1
	}
	// A record of the block (written when a block was connected on top of
	// it) goes within the block's unit: the chain state holds the tip's
	// metadata, so no crash leaves a tip without it.
	if err := db.eng.PutMeta(work, blockMetaName(b.Height), nil); err != nil {
		return failed(storageErr("forgetting the block", err))
	}
	return db.finishBlock(ctx, cs, below)
}

// disconnectBlock undoes the block's effects on its transactions with
// ctx; like a connected block, the undo is one unit of durability, ended by
// finishBlock's chain state write. The block's transactions return to
// unmined (its coinbase, which cannot come back, is deleted), and keep
// their spends, as a validator's unmined transactions hold theirs: the
// set's statistics and walk count an output an unmined transaction spends
// as unspent. The transactions the block made conflicting (connected's
// losers) are restored: they take back what they held, so the block's
// spends are undone first, and the block's transactions then spend again
// what no loser took back (respendBlock).
func (db *DB) disconnectBlock(ctx context.Context, b Block, connected *connectedBlock) error {
	losers := connected.Conflicting
	var txids []chainhash.Hash
	var coinbase *chainhash.Hash
	err := b.EachChunk(func(txs []*chain.Tx) error {
		if len(losers) > 0 {
			// A chunk's spends are undone last transaction first; a
			// valid block never spends one output twice, so the
			// chunks' order does not matter.
			var spends []*Spend
			for i := len(txs) - 1; i >= 0; i-- {
				s, err := spendsOf(txs[i], nil)
				if err != nil {
					return err
				}
				spends = append(spends, s...)
			}
			if err := db.unspendAll(ctx, spends, false); err != nil && !errors.Is(err, model.ErrTxNotFound) {
				return err
			}
		}
		for _, tx := range txs {
			txids = append(txids, tx.ID)
			if tx.IsCoinbase() {
				coinbase = &tx.ID
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for len(txids) > 0 {
		n := min(len(txids), setMinedBatch)
		if err := db.setMined(ctx, txids[:n], model.MinedBlockInfo{BlockID: connected.ID, BlockHeight: b.Height, UnsetMined: true}, nil); err != nil && !errors.Is(err, model.ErrTxNotFound) {
			return err
		}
		txids = txids[n:]
	}
	if coinbase != nil {
		if err := db.deleteCoinbase(ctx, *coinbase); err != nil {
			return err
		}
	}
	if len(losers) > 0 {
		if err := db.restoreConflicting(ctx, losers); err != nil {
			return err
		}
		if err := db.respendBlock(ctx, b); err != nil {
			return err
		}
	}
	return db.forgetBlockLosers(ctx, b.Hash, losers)
}

// deleteCoinbase deletes a disconnected block's coinbase, which no
// transaction off the chain can spend, unless another block mines it too:
// a coinbase that a later block repeated (BIP30's two exempt blocks) is
// one record, and its earlier block's outputs come back with it.
func (db *DB) deleteCoinbase(ctx context.Context, txid chainhash.Hash) error {
	found, err := db.readRecords(ctx, []engine.Key{engine.Key(record.MasterKey(txid))})
	switch {
	case err != nil:
		return err
	case errors.Is(found[0].err, errMissing):
		return nil
	case found[0].err != nil:
		return found[0].err
	case len(found[0].rec.BlockIDs) > 0:
		return nil
	}
	if err := db.deleteTx(ctx, txid, true); err != nil && !errors.Is(err, model.ErrTxNotFound) {
		return err
	}
	return nil
}

// respendBlock has the transactions of a disconnected block, unmined now,
// spend their inputs again after its losers took back theirs: a chunk in
// one call, or, when that is refused, a transaction at a time, in block
// order. One whose spend is refused (a loser holds an input, or its
// parent is conflicting) lost to a loser: it becomes conflicting, with its
// descendants.
func (db *DB) respendBlock(ctx context.Context, b Block) error {
	opts := SpendOptions{BlockHeight: b.Height, IgnoreLocked: true}
	return b.EachChunk(func(txs []*chain.Tx) error {
		all, err := chunkSpends(txs)
		if err != nil {
			return err
		}
		if err := db.spendAll(ctx, all, opts); !isRefusal(err) {
			return err
		}
		for _, tx := range txs {
			spends, err := spendsOf(tx, nil)
			if err != nil {
				return err
			}
			if len(spends) == 0 {
				continue
			}
			switch err := db.spendAll(ctx, spends, opts); {
			case err == nil:
				continue
			case !isRefusal(err):
				return err
			}
			lost, err := db.withDescendants(ctx, []chainhash.Hash{tx.ID})
			if err != nil {
				return err
			}
			if err := db.setConflictingReleasing(ctx, lost); err != nil {
				return err
			}
		}
		return nil
	})
}

// isRefusal reports whether err is the store refusing an operation (a
// *model.Error other than a storage error), not failing at it.
func isRefusal(err error) bool {
	var e *model.Error
	return errors.As(err, &e) && e.Code != model.CodeStorageError
}

// CanDisconnect refuses, before anything changes, blocks that could not
// be disconnected in turn, as a reorganisation (blockpath.Path.Reorg)
// disconnects them: each must be the chain's, the tip first and each one
// the block below the one before it (else ErrNotTip), and none may be a
// snapshot's block the store was loaded from, nor lie below it.
func (db *DB) CanDisconnect(ctx context.Context, blocks []Tip) error {
	cs, err := db.loadChainState(ctx) // once: BlockAt would read it again for each block
	if err != nil {
		return err
	}
	for i, b := range blocks {
		held, err := db.blockOf(ctx, cs, b.Height)
		if err != nil && !errors.Is(err, errNoBlock) {
			return err
		}
		if !cs.HasTip || int64(b.Height) != int64(cs.TipHeight)-int64(i) || err != nil || held.Hash != b.Hash {
			return fmt.Errorf("%w: cannot disconnect block %s at height %d: the blocks to disconnect must be the chain's from its tip (%s at height %d) down",
				ErrNotTip, b.Hash, b.Height, cs.TipHash, cs.TipHeight)
		}
		if b.Height < cs.First {
			return fmt.Errorf("%w: cannot disconnect block %s at height %d: the store was loaded from a snapshot of the set after it, and holds no block below %d",
				errNoBlock, b.Hash, b.Height, cs.First)
		}
	}
	return nil
}
