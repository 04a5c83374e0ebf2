package utxo

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/coinstats"
)

// A block's change to the set's statistics costs a SHA-256, 384 bytes of
// ChaCha20 and a 3072-bit multiplication per coin it creates or spends:
// on a block of a thousand transactions, about what the block's writes
// cost. So the block path does not wait for it. A connected block leaves
// its transaction ids under statsPendingName and counts itself in the
// chain state's StatsBehind; the stats worker works the change out beside
// the next blocks, and multiplies it into the product of the changes it
// finished. Once statsFoldBlocks of them wait, the next block boundary
// (finishBlock) folds their product into the chain state's Stats and
// drops those blocks' pending records: one multiplication every few
// blocks is all that the statistics cost the block path. Everything that
// reads or undoes the statistics (SetStats, Summary, DisconnectBlock, a
// block read in chunks, Close) waits for the worker first, so no caller
// ever sees statistics other than the tip's; DisconnectBlock, a block
// read in chunks and Close fold them all into the chain state first, and
// so do SetBlockHeight and the Delete of a transaction of the chain,
// which may remove what a pending block is worked out from.
//
// A crash loses the worker's unfolded results, not the pending records:
// Open hands those blocks to the worker again, which reads the blocks'
// transactions and the outputs they spent back from the store. A block
// spends outputs whose transactions outlive it by the retention less the
// unmined retention at least (Options.BlockHeightRetention): a mempool
// spend, which schedules a fully spent parent, comes at most the unmined
// retention before the block mining it. The worker's queue holds at most
// statsLagBlocks blocks, and less than half that lifetime, and a fold
// waits for no more blocks than the queue holds: the blocks a crash leaves
// pending are then at most that twice (those queued, and those worked out
// but not yet folded), plus the one being connected, so the records of the
// outputs a pending block spent are still in the store when the reopened
// store works it out, for any unmined retention and a block height
// retention of MinBlockHeightRetention or more.

// statsPendingName is the record of a connected block whose change the
// chain state's Stats does not hold yet: its height (4 bytes, big-endian),
// then its transaction ids. The records take statsPendingSlots slots, a
// height's slot being its remainder: however a crash leaves them, no more
// than that many are ever kept.
func statsPendingName(height uint32) string {
	return fmt.Sprintf("stats-pending/%03d", height%statsPendingSlots)
}

// statsPendingSlots is above statsLagBlocks, so the pending blocks never
// share a slot.
const statsPendingSlots = 2 * statsLagBlocks

// The worker's queue holds at most statsLagBlocks blocks and, unless it
// holds one block only, statsLagBytes of their transactions: a block
// waits for room before it returns.
const (
	statsLagBlocks = 64
	statsLagBytes  = 64 << 20
)

// statsFoldBlocks is how many worked-out blocks a block boundary lets wait
// before it folds them into the chain state: a fold costs two 3072-bit
// multiplications and a decoding of the chain state's Stats, which every
// block of a small chain's would feel.
const statsFoldBlocks = 16

// statsJob is a connected block whose change is to be worked out: from
// txs, or, when nil, from the transactions its pending record names.
type statsJob struct {
	height uint32
	hash   chainhash.Hash
	txs    []*chain.Tx
	size   int
}

// statsDone is a block's worked-out change, and the product of the
// finished changes up to it, so that a fold multiplies once. Neither
// changes once the worker has published it.
type statsDone struct {
	height uint32
	delta  *coinstats.Stats
	upTo   *coinstats.Stats
}

// product returns the product of a change with the one before it (nil for
// the first change).
func product(before, delta *coinstats.Stats) *coinstats.Stats {
	if before == nil {
		return delta
	}
	p := new(coinstats.Stats)
	p.Combine(before)
	p.Combine(delta)
	return p
}

// statsWorker works out the changes of the blocks it is given, one at a
// time, in the order given.
type statsWorker struct {
	db        *DB
	maxBlocks int
	foldEvery int // finished blocks a boundary lets wait (statsFoldBlocks)

	mu     sync.Mutex
	cond   *sync.Cond
	queue  []statsJob // the first is being worked out
	bytes  int        // the queue's transaction bytes
	done   []statsDone
	gen    uint64 // counts the changes to done other than the worker's
	failed error  // the first failure; the worker stops there
	closed bool
	exited chan struct{}
}

func newStatsWorker(db *DB) *statsWorker {
	w := &statsWorker{db: db, exited: make(chan struct{}),
		maxBlocks: max(1, min(statsLagBlocks, (int(db.opts.BlockHeightRetention)-int(db.opts.UnminedRetention)-1)/2))}
	w.foldEvery = min(statsFoldBlocks, w.maxBlocks)
	w.cond = sync.NewCond(&w.mu)
	go w.run()
	return w
}

func (w *statsWorker) run() {
	defer close(w.exited)
	ctx := context.Background()
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		for len(w.queue) == 0 && !w.closed {
			w.cond.Wait()
		}
		if len(w.queue) == 0 || w.failed != nil {
			return
		}
		job, gen, before := w.queue[0], w.gen, w.lastUpTo()
		w.mu.Unlock()
		// Hashed on every processor: a worker that falls statsLagBlocks
		// behind holds the blocks up, so its pace is theirs. The product
		// is multiplied out of the lock, which every block takes.
		delta, err := w.db.blockStats(ctx, job, runtime.GOMAXPROCS(0))
		upTo := product(before, &delta)
		w.mu.Lock()
		if w.failed != nil {
			return // poisoned meanwhile
		}
		w.queue, w.bytes = w.queue[1:], w.bytes-job.size
		if err != nil {
			w.failed = fmt.Errorf("working out the set statistics of block %s at height %d: %w", job.hash, job.height, err)
			w.queue = nil
		} else {
			if w.gen != gen { // done changed meanwhile
				upTo = product(w.lastUpTo(), &delta)
			}
			w.done = append(w.done, statsDone{height: job.height, delta: &delta, upTo: upTo})
		}
		w.cond.Broadcast()
	}
}

// submit queues a block once there is room for it.
func (w *statsWorker) submit(job statsJob) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.failed == nil && len(w.queue) > 0 && (len(w.queue) >= w.maxBlocks || w.bytes+job.size > statsLagBytes) {
		w.cond.Wait()
	}
	if w.failed != nil {
		return w.failed
	}
	w.queue, w.bytes = append(w.queue, job), w.bytes+job.size
	w.cond.Broadcast()
	return nil
}

// wait returns once every queued block is worked out, or the worker
// failed.
func (w *statsWorker) wait() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.failed == nil && len(w.queue) > 0 {
		w.cond.Wait()
	}
	return w.failed
}

// err is the worker's failure, if it failed.
func (w *statsWorker) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed
}

// finished returns the changes worked out and not yet dropped, in
// height order.
func (w *statsWorker) finished() []statsDone {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]statsDone(nil), w.done...)
}

// foldable returns how many changes are finished, the heights of the
// first and the last, and their product; none while fewer than foldEvery
// wait, unless all is set.
func (w *statsWorker) foldable(all bool) (n int, first, last uint32, upTo *coinstats.Stats) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n = len(w.done)
	if n == 0 || (!all && n < w.foldEvery) {
		return 0, 0, 0, nil
	}
	return n, w.done[0].height, w.done[n-1].height, w.done[n-1].upTo
}

// lastUpTo is the product of the finished changes, nil when there are
// none. The caller holds mu.
func (w *statsWorker) lastUpTo() *coinstats.Stats {
	if len(w.done) == 0 {
		return nil
	}
	return w.done[len(w.done)-1].upTo
}

// drop forgets the first n finished changes, once a durable chain state
// holds them.
func (w *statsWorker) drop(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done, w.gen = w.done[n:], w.gen+1
	var before *coinstats.Stats
	for i := range w.done { // finished since the fold
		w.done[i].upTo = product(before, w.done[i].delta)
		before = w.done[i].upTo
	}
}

// poison stops the worker for good: a block boundary failed, so what the
// chain state holds of the worker's results is unknown until the store is
// reopened and resumes from it.
func (w *statsWorker) poison(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed == nil {
		w.failed = fmt.Errorf("a block boundary failed (%w); the set statistics resume when the store is reopened", err)
	}
	w.queue = nil
	w.cond.Broadcast()
}

// stop ends the worker once the block it works on is done.
func (w *statsWorker) stop() {
	w.mu.Lock()
	w.closed, w.queue = true, w.queue[:min(len(w.queue), 1)]
	w.cond.Broadcast()
	w.mu.Unlock()
	<-w.exited
}

// firstPending is the height of the lowest block whose change cs's Stats
// lacks.
func (cs *chainState) firstPending() uint32 { return cs.TipHeight + 1 - cs.StatsBehind }

// foldStats adds the changes the worker finished to cs's Stats, once
// foldEvery of them wait or when all is set; once cs is durable,
// dropFolded forgets them. It returns how many it added.
func (db *DB) foldStats(cs *chainState, all bool) (int, error) {
	if db.stats == nil || (!all && int(cs.StatsBehind) < db.stats.foldEvery) {
		return 0, nil // too few blocks pending to wait for a fold
	}
	n, first, last, upTo := db.stats.foldable(all)
	if n == 0 {
		return 0, nil
	}
	if int(cs.StatsBehind) < n || first != cs.firstPending() || last != first+uint32(n-1) || last > cs.TipHeight {
		return 0, fmt.Errorf("the set statistics of blocks %d to %d were worked out out of turn (the chain state lacks %d blocks below %d)", first, last, cs.StatsBehind, cs.TipHeight)
	}
	if err := cs.applyStats(upTo, false); err != nil {
		return 0, err
	}
	cs.StatsBehind -= uint32(n)
	return n, nil
}

// dropFolded forgets the first n finished changes, which the chain state
// just written holds, and deletes their blocks' pending records with ctx.
// A crash may keep a deleted record: the next block at a height of the
// same slot writes over it.
func (db *DB) dropFolded(ctx context.Context, n int) error {
	if n == 0 {
		return nil
	}
	for _, d := range db.stats.finished()[:n] {
		if err := db.eng.PutMeta(ctx, statsPendingName(d.height), nil); err != nil {
			return storageErr("deleting a block's pending statistics record", err)
		}
	}
	db.stats.drop(n)
	return nil
}

// commitStats waits for the worker and writes the chain state with every
// block's change in its Stats: a disconnection and a block read in chunks
// start from the tip's statistics, Close leaves no block pending, and
// Delete and SetBlockHeight remove no record a pending block's change is
// worked out from. The caller holds chainMu.
func (db *DB) commitStats(ctx context.Context) error {
	if db.stats == nil {
		return nil
	}
	if err := db.stats.wait(); err != nil {
		return err
	}
	cs, err := db.loadChainState(ctx)
	if err != nil || cs.StatsBehind == 0 {
		return err
	}
	n, err := db.foldStats(&cs, true)
	if err != nil {
		return err
	}
	if err := db.saveChainState(ctx, cs); err != nil {
		return err
	}
	return db.dropFolded(ctx, n)
}

// resumeStats hands the worker the blocks whose changes the chain state
// lacks when the store opens (after a crash).
func (db *DB) resumeStats(ctx context.Context, cs chainState) error {
	for h := cs.firstPending(); cs.StatsBehind > 0 && h <= cs.TipHeight; h++ {
		b, err := db.blockOf(ctx, cs, h)
		if err != nil {
			return err
		}
		if err := db.stats.submit(statsJob{height: h, hash: b.Hash}); err != nil {
			return err
		}
	}
	return nil
}

// blockStats works out a queued block's change, with that many workers
// hashing.
func (db *DB) blockStats(ctx context.Context, job statsJob, workers int) (coinstats.Stats, error) {
	txs := job.txs
	if txs == nil {
		var err error
		if txs, err = db.pendingTxs(ctx, job.height); err != nil {
			return coinstats.Stats{}, err
		}
	}
	return db.txsStats(ctx, txs, job.height, job.hash, workers, false)
}

// pendingTxs reads back the transactions of the block at height that its
// pending record names.
func (db *DB) pendingTxs(ctx context.Context, height uint32) ([]*chain.Tx, error) {
	raw, err := db.eng.GetMeta(ctx, statsPendingName(height))
	if err != nil {
		return nil, storageErr("reading a block's pending statistics record", err)
	}
	if len(raw) < 4 || (len(raw)-4)%chainhash.HashSize != 0 || binary.BigEndian.Uint32(raw) != height {
		return nil, fmt.Errorf("the store's pending statistics record of block %d is missing or damaged (%d bytes): the store is damaged", height, len(raw))
	}
	raw = raw[4:]
	txs := make([]*chain.Tx, 0, len(raw)/chainhash.HashSize)
	for len(raw) > 0 {
		txid := chainhash.Hash(raw[:chainhash.HashSize])
		raw = raw[chainhash.HashSize:]
		meta, err := db.Get(ctx, txid, FieldTx)
		if err != nil {
			return nil, fmt.Errorf("transaction %s of block %d: %w", txid, height, err)
		}
		txs = append(txs, meta.Tx)
	}
	return txs, nil
}

// pendingRecord is the pending record of a block's transactions.
func pendingRecord(height uint32, txs []*chain.Tx) []byte {
	b := make([]byte, 0, 4+len(txs)*chainhash.HashSize)
	b = binary.BigEndian.AppendUint32(b, height)
	for _, tx := range txs {
		b = append(b, tx.ID[:]...)
	}
	return b
}

// putPending writes the block's pending record with ctx.
func (db *DB) putPending(ctx context.Context, b Block) error {
	return storageErr("writing the block's pending statistics record", db.eng.PutMeta(ctx, statsPendingName(b.Height), pendingRecord(b.Height, b.Txs)))
}
