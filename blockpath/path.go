package blockpath

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/blockstore"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// Config says what a Path feeds.
type Config struct {
	// Store is the UTXO store, whose chain state is the truth.
	Store *utxo.DB
	// Rules check every block before anything of it is kept or applied.
	Rules chain.BlockRules
	// Blocks keeps the raw blocks; nil keeps none.
	Blocks *blockstore.Store
	// Index is the address index; nil keeps none.
	Index *index.Index
	// IndexBulk, when above zero, indexes in bulk (index.Bulk), writing
	// the index every IndexBulk blocks and on Close: an import's mode.
	IndexBulk int
	// Logger hears what Open settles (slog.Default when nil).
	Logger *slog.Logger
}

// Path carries blocks into the store and the stores derived from it. Its
// methods are safe for concurrent use; blocks pass one at a time.
type Path struct {
	store  *utxo.DB
	rules  chain.BlockRules
	blocks *rawBlocks // nil when the raw blocks are not kept
	index  *addressIndex
	// derived are the block store and the index, when kept, in the order
	// a block reaches them.
	derived []derived
	log     *slog.Logger

	// still is held by every change of the stores (Connect,
	// ConnectStaged, Reorg) for its whole run, and by Hold; mu, taken
	// after it, guards the path's state, which the reads of where the
	// stores stand (Lag, Levels) take alone, so a Hold does not stop them.
	still      sync.Mutex
	mu         sync.Mutex
	times      StepTimes // guarded by mu
	announce   atomic.Pointer[func(context.Context, utxo.Block)]
	unannounce atomic.Pointer[func(context.Context, utxo.Block)]
}

// StepTimes are what the path's blocks have cost each store since Open:
// the time spent in each step of their connections and disconnections,
// and the blocks and transactions the address index took. A benchmark
// reports the index's share of a block's path beside the store's.
type StepTimes struct {
	// Check is the block checks'; Keep the block store's; Store the UTXO
	// store's (ConnectBlock, DisconnectBlock); Index the address index's:
	// connecting, disconnecting and, in bulk, writing what it holds, the
	// last write (Close) included.
	Check, Keep, Store, Index time.Duration
	// IndexedBlocks and IndexedTxs count the blocks the index connected
	// and their transactions.
	IndexedBlocks, IndexedTxs uint64
}

// timed adds the time fn takes to *spent.
func timed(spent *time.Duration, fn func() error) error {
	start := time.Now()
	err := fn()
	*spent += time.Since(start)
	return err
}

// ErrBehind is what a [*BehindError] matches.
var ErrBehind = errors.New("a store derived from the UTXO store is behind it")

// ErrOtherChain refuses a block at a height the store holds that is not
// the store's block there.
var ErrOtherChain = errors.New("the block belongs to another chain than the store's")

// Lag says which derived stores lack the store's blocks, from which
// height on.
type Lag struct {
	// Derived names them ("the address index", "the block store and the
	// address index"); "" when every derived store is level.
	Derived string
	// Next is the first height they lack: the store's tip plus one when
	// they are level.
	Next uint32
}

func (l Lag) String() string {
	if l.Derived == "" {
		return "every store is level with the store"
	}
	verb := "lacks"
	if strings.Contains(l.Derived, " and ") {
		verb = "lack"
	}
	return fmt.Sprintf("%s %s the store's blocks from height %d on", l.Derived, verb, l.Next)
}

// BehindError refuses a new block while a derived store lacks blocks the
// store holds: the feeder sends the store's blocks from Next on first.
type BehindError struct {
	Lag
	// Height and Hash are the refused block's.
	Height uint32
	Hash   chainhash.Hash
}

func (e *BehindError) Error() string {
	return fmt.Sprintf("%s: block %s at height %d is refused until those are sent", e.Lag, e.Hash, e.Height)
}

// Is makes errors.Is(err, ErrBehind) true.
func (e *BehindError) Is(target error) bool { return target == ErrBehind }

// Open builds the path and settles the derived stores with the store: see
// the package doc for the rule.
func Open(ctx context.Context, cfg Config) (*Path, error) {
	if cfg.Store == nil || cfg.Rules.Params == nil {
		return nil, errors.New("blockpath: Config.Store and Config.Rules are required")
	}
	p := &Path{store: cfg.Store, rules: cfg.Rules, log: cfg.Logger}
	if p.log == nil {
		p.log = slog.Default()
	}
	if cfg.Blocks != nil {
		p.blocks = &rawBlocks{bs: cfg.Blocks}
		p.derived = append(p.derived, p.blocks)
	}
	if cfg.Index != nil {
		p.index = &addressIndex{ix: cfg.Index}
		p.derived = append(p.derived, p.index)
	}
	for _, d := range p.derived {
		if err := d.load(); err != nil {
			return nil, err
		}
	}
	if err := p.settle(ctx); err != nil {
		return nil, err
	}
	if cfg.IndexBulk > 0 && p.index != nil {
		if err := p.beginBulkIndex(cfg.IndexBulk); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// beginBulkIndex starts the address index's bulk import. Into an index
// that has blocks, the import first reads the index's addresses and the
// outputs it marks as pay-to-pubkey (index.Bulk), a pause before the
// first block that can last a minute at mainnet size: the log says so.
func (p *Path) beginBulkIndex(every int) error {
	_, resumed := p.index.tip()
	if resumed {
		p.log.Info("the address index has blocks: reading its addresses and pay-to-pubkey outputs, so that the import looks up only those")
	}
	start := time.Now()
	if err := p.index.beginBulk(every); err != nil {
		return err
	}
	if resumed {
		loaded := p.index.bulk.Loaded()
		p.log.Info("the address index's import starts", "addresses", loaded.Addresses, "p2pk_outputs", loaded.P2PKOutputs, "seconds", time.Since(start).Seconds())
	}
	return nil
}

// Close writes what a bulk index holds. The stores stay open: their
// owner closes them.
func (p *Path) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.index == nil {
		return nil
	}
	return timed(&p.times.Index, p.index.endBulk)
}

// Flush writes what a bulk index holds, as Close does, and the import
// goes on; its time is the index's. The benchmark calls it where its
// warm-up ends, so that the measured blocks do not pay for the warm-up's
// writes.
func (p *Path) Flush() error {
	p.still.Lock()
	defer p.still.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.index == nil || p.index.bulk == nil {
		return nil
	}
	return timed(&p.times.Index, p.index.flush)
}

// StepTimes says what the path's blocks have cost each store so far.
func (p *Path) StepTimes() StepTimes {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.times
}

// Rules are the checks every block passes.
func (p *Path) Rules() chain.BlockRules { return p.rules }

// Store is the UTXO store the path feeds.
func (p *Path) Store() *utxo.DB { return p.store }

// Index is the address index the path feeds; nil when none is kept.
func (p *Path) Index() *index.Index {
	if p.index == nil {
		return nil
	}
	return p.index.ix
}

// Blocks is the block store the path feeds; nil when none is kept.
func (p *Path) Blocks() *blockstore.Store {
	if p.blocks == nil {
		return nil
	}
	return p.blocks.bs
}

// OnConnect makes fn hear of every block connected from now on (also
// those of a reorganisation), once every store has it: the daemon pushes
// them to its websocket subscribers.
func (p *Path) OnConnect(fn func(context.Context, utxo.Block)) { p.announce.Store(&fn) }

// OnDisconnect makes fn hear of every block a reorganisation disconnects
// from now on, tip first, once no store has it, and before OnConnect's
// fn hears of the blocks it connects. A reorganisation that fails, and
// returns to the old branch, is heard of by neither.
func (p *Path) OnDisconnect(fn func(context.Context, utxo.Block)) { p.unannounce.Store(&fn) }

// Next is the first height whose block the path needs: the store's tip
// plus one when every derived store is level with the store, or the first
// block a derived store lacks; 0 for an empty store. A feeder that resumes
// sends from there.
func (p *Path) Next(ctx context.Context) (uint32, error) {
	lag, err := p.Lag(ctx)
	return lag.Next, err
}

// Lag says which derived stores lack the store's blocks, from which height
// on (Next).
func (p *Path) Lag(ctx context.Context) (Lag, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	chainSum, err := p.store.ChainSummary(ctx)
	if err != nil {
		return Lag{}, err
	}
	return p.lag(chainSum), nil
}

// Level is where a store stands: its tip, when it holds a block.
type Level struct {
	Tip    utxo.Tip
	HasTip bool
}

// Levels are the tips of the store and of the derived stores it keeps.
type Levels struct {
	Store Level
	// Index and Blocks are nil when the path keeps none.
	Index, Blocks *Level
}

// Levels reports where each store stands.
func (p *Path) Levels(ctx context.Context) (Levels, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var l Levels
	tip, ok, err := p.store.Tip(ctx)
	if err != nil {
		return l, err
	}
	l.Store = Level{Tip: tip, HasTip: ok}
	if p.index != nil {
		l.Index = &Level{Tip: p.index.last, HasTip: p.index.has}
	}
	if p.blocks != nil {
		l.Blocks = &Level{Tip: p.blocks.last, HasTip: p.blocks.has}
	}
	return l, nil
}

// Kept returns the store's block at height from the block store; ok is
// false when the block store does not hold it (none is kept, it was
// pruned, or it never got it).
func (p *Path) Kept(ctx context.Context, height uint32) (b *chain.Block, ok bool, err error) {
	if p.blocks == nil {
		return nil, false, nil
	}
	info, onChain, err := p.store.BlockAt(ctx, height)
	if err != nil || !onChain {
		return nil, false, err
	}
	return p.blocks.block(height, info.Hash)
}

// Connect checks the block and carries it along the path at height.
//
// A block at the store's next height is kept, connected to the store and
// indexed, unless a derived store lacks earlier blocks: it is then refused
// with a *BehindError naming the height to send. A block at a height the
// store holds must be the store's block there (else ErrOtherChain), and
// only the derived stores that lack it take it: that is how a feeder
// brings them level.
func (p *Path) Connect(ctx context.Context, b *chain.Block, height uint32) error {
	p.still.Lock()
	defer p.still.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := timed(&p.times.Check, func() error { return p.rules.Check(b, height) }); err != nil {
		return err
	}
	blk := &pathBlock{Block: b, height: height}
	passed(stepConnect, stepChecked, height)
	chainSum, err := p.store.ChainSummary(ctx)
	if err != nil {
		return err
	}
	if tip := chainSum.Tip; chainSum.HasTip && height <= tip.Height {
		return p.level(ctx, chainSum, blk)
	}
	return p.extend(ctx, chainSum, blk)
}

// extend connects a checked block on top of the store's tip, unless it
// does not extend the tip (before the block store keeps it), or a derived
// store lacks the store's earlier blocks.
func (p *Path) extend(ctx context.Context, chainSum utxo.ChainSummary, b *pathBlock) error {
	if err := chainSum.CheckExtends(b.Hash, b.PrevHash(), b.height); err != nil {
		return err
	}
	if lag := p.lag(chainSum); lag.Derived != "" {
		return &BehindError{Lag: lag, Height: b.height, Hash: b.Hash}
	}
	if err := p.connect(ctx, b); err != nil {
		return err
	}
	p.tell(ctx, b)
	return nil
}

// ConnectStaged is Connect for a block too large to hold in memory, staged
// in the path's block store (blockstore.Store.Stage) from where it came:
// it is checked as it is read from there (chain.BlockRules.CheckStream),
// kept where it lies (blockstore.Store.Adopt), and connected to the store a
// chunk of transactions at a time, read back from the block store. Memory
// holds one chunk and the few dozen bytes per transaction that the checks
// and the store keep (txids), never the block. The address index, when
// kept, takes the block whole: its work set is the block's addresses. A
// block at a height the store holds is read whole too (a derived store
// catching up). The staged block is kept or discarded when ConnectStaged
// returns.
func (p *Path) ConnectStaged(ctx context.Context, st *blockstore.Staged, height uint32) (err error) {
	p.still.Lock()
	defer p.still.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	var b *pathBlock
	err = timed(&p.times.Check, func() (err error) {
		b, err = p.checkStaged(st, height)
		return err
	})
	if err != nil {
		return errors.Join(err, st.Discard())
	}
	defer func() {
		if b.staged != nil { // not adopted
			err = errors.Join(err, b.staged.Discard())
		}
	}()
	chainSum, err := p.store.ChainSummary(ctx)
	if err != nil {
		return err
	}
	if tip := chainSum.Tip; chainSum.HasTip && height <= tip.Height {
		whole, err := st.ReadBlock()
		if err != nil {
			return err
		}
		return p.level(ctx, chainSum, &pathBlock{Block: whole, height: height})
	}
	return p.extend(ctx, chainSum, b)
}

// checkStaged checks the staged block as the block at height and returns
// it as the path carries it: its header, size and staged bytes.
func (p *Path) checkStaged(st *blockstore.Staged, height uint32) (*pathBlock, error) {
	if p.blocks == nil {
		return nil, errors.New("blockpath: a staged block needs the block store, which this path does not keep")
	}
	r, err := st.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	br, err := chain.NewBlockReader(r)
	if err != nil {
		return nil, err
	}
	info := br.Info()
	if info.Hash != st.Hash() {
		return nil, fmt.Errorf("blockpath: the block staged as %s is %s", st.Hash(), info.Hash)
	}
	if err := p.rules.CheckStream(br, st.Size(), height); err != nil {
		return nil, err
	}
	passed(stepConnect, stepChecked, height)
	info.Size = st.Size()
	return &pathBlock{Block: &chain.Block{BlockInfo: info}, height: height, staged: st, streamed: p.blocks}, nil
}

// Reorg moves the store from its tip to another branch: disconnect holds
// the store's blocks from its tip down to the block after the fork point,
// tip first, and connect the branch's blocks from the block after the fork
// point on. Every block of both is checked before anything changes;
// a branch that fails while connecting is undone and the old one connected
// again.
func (p *Path) Reorg(ctx context.Context, disconnect, connect []*chain.Block) error {
	p.still.Lock()
	defer p.still.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	chainSum, err := p.store.ChainSummary(ctx)
	if err != nil {
		return err
	}
	tip := chainSum.Tip
	if !chainSum.HasTip || uint32(len(disconnect)) > tip.Height+1 {
		return fmt.Errorf("%w: a reorganisation disconnects %d blocks from a store whose tip is at height %d", utxo.ErrNotTip, len(disconnect), tip.Height)
	}
	fork := int64(tip.Height) - int64(len(disconnect))
	// The blocks to disconnect are checked too: the store matches a block
	// to its tip by hash alone and undoes the transactions it is given,
	// so a peer's block with the tip's header and other transactions
	// would undo the wrong ones. They must also be the store's blocks,
	// from its tip down: the store would refuse a stale list part way.
	old := make([]*pathBlock, len(disconnect))
	tips := make([]utxo.Tip, len(disconnect))
	for i, b := range disconnect {
		old[i] = &pathBlock{Block: b, height: tip.Height - uint32(i)}
		tips[i] = utxo.Tip{Height: old[i].height, Hash: b.Hash}
		if err := timed(&p.times.Check, func() error { return p.rules.Check(b, old[i].height) }); err != nil {
			return err
		}
	}
	if err := p.store.CanDisconnect(ctx, tips); err != nil {
		return fmt.Errorf("reorganisation: %w", err)
	}
	branch := make([]*pathBlock, len(connect))
	for i, b := range connect {
		branch[i] = &pathBlock{Block: b, height: uint32(fork + 1 + int64(i))}
		if err := timed(&p.times.Check, func() error { return p.rules.Check(b, branch[i].height) }); err != nil {
			return err
		}
	}
	// A derived store may lack the blocks the reorganisation disconnects,
	// not those below them, which the branch goes on from.
	if lag := p.lag(chainSum); lag.Derived != "" && int64(lag.Next) <= fork && len(branch) > 0 {
		return &BehindError{Lag: lag, Height: branch[0].height, Hash: branch[0].Hash}
	}
	for _, b := range old {
		if err := p.disconnect(ctx, b); err != nil {
			return fmt.Errorf("reorganisation: disconnecting block %s at height %d: %w", b.Hash, b.height, err)
		}
	}
	for i, b := range branch {
		if err := p.connect(ctx, b); err != nil {
			connected := branch[:i]
			if !p.storeLacks(ctx, b) {
				// The store took it, and a later step failed (the
				// index's): it is undone too.
				connected = branch[:i+1]
			}
			back := p.undoReorg(ctx, old, connected)
			return errors.Join(fmt.Errorf("reorganisation: connecting block %s at height %d: %w", b.Hash, b.height, err), back)
		}
	}
	if fn := p.unannounce.Load(); fn != nil {
		for _, b := range old {
			(*fn)(ctx, b.utxo())
		}
	}
	for _, b := range branch {
		p.tell(ctx, b)
	}
	return nil
}

// undoReorg returns to the old branch after the new one failed part way.
func (p *Path) undoReorg(ctx context.Context, old, connected []*pathBlock) error {
	for i := len(connected) - 1; i >= 0; i-- {
		if err := p.disconnect(ctx, connected[i]); err != nil {
			return fmt.Errorf("reorganisation: returning to the old branch: %w", err)
		}
	}
	for i := len(old) - 1; i >= 0; i-- {
		if err := p.connect(ctx, old[i]); err != nil {
			return fmt.Errorf("reorganisation: returning to the old branch: %w", err)
		}
	}
	return nil
}

// connect is a checked block's path: keep, store, index.
func (p *Path) connect(ctx context.Context, b *pathBlock) error {
	if err := timed(&p.times.Check, func() error { return p.checkRepeats(ctx, b) }); err != nil {
		return err
	}
	if p.blocks != nil {
		if err := timed(&p.times.Keep, func() error { return p.blocks.connect(b) }); err != nil {
			return fmt.Errorf("keeping block %s at height %d: %w", b.Hash, b.height, err)
		}
		passed(stepConnect, stepKept, b.height)
	}
	if err := timed(&p.times.Store, func() error { return p.store.ConnectBlock(ctx, b.utxo()) }); err != nil {
		if p.blocks != nil && p.storeLacks(ctx, b) {
			// A block the store refuses is not the chain's: its raw bytes
			// go, so the block store stays level with the store. One the
			// store failed on after its tip reached it (its checkpoint,
			// say) stays: the store holds it.
			err = errors.Join(err, p.blocks.disconnect(utxo.Tip{Height: b.height, Hash: b.Hash}))
		}
		return err
	}
	passed(stepConnect, stepStored, b.height)
	if p.index != nil {
		if err := timed(&p.times.Index, func() error { return p.indexBlock(b) }); err != nil {
			return err
		}
		passed(stepConnect, stepIndexed, b.height)
	}
	return nil
}

// storeLacks reports whether the store's tip is not block b, as read after
// the store failed on b; unsure (the read fails too), it says the store may
// hold it, and a block store left ahead is rolled back when the path opens.
func (p *Path) storeLacks(ctx context.Context, b *pathBlock) bool {
	chainSum, err := p.store.ChainSummary(ctx)
	return err == nil && (!chainSum.HasTip || chainSum.Tip.Hash != b.Hash)
}

// checkRepeats refuses a block holding a transaction mined below it
// (BIP30), where chain.BlockRules.ChecksRepeats says one may be: the store
// holds one record per transaction id, and would take the block's copy as
// the earlier one mined again, while the index would count its outputs
// twice. Bitcoin Core accepts a repeat of a transaction whose outputs are
// all spent; the store cannot hold that either, and no chain holds one
// outside the two blocks the rule exempts. A block read from the block
// store as it is connected (streamed) is above any chain's BIP34 height.
func (p *Path) checkRepeats(ctx context.Context, b *pathBlock) error {
	if b.streamed != nil || !p.rules.ChecksRepeats(b.height, b.Hash) {
		return nil
	}
	// A block that is not the next one is the store's to refuse, as not
	// next: its transactions may be the store's own block's.
	chainSum, err := p.store.ChainSummary(ctx)
	if err != nil {
		return err
	}
	if chainSum.HasTip && b.PrevHash() != chainSum.Tip.Hash {
		return nil
	}
	items := make([]*utxo.UnresolvedMetaData, len(b.Txs))
	for i, tx := range b.Txs {
		items[i] = &utxo.UnresolvedMetaData{TxID: tx.ID}
	}
	if err := p.store.BatchDecorate(ctx, items); err != nil {
		return err
	}
	for _, it := range items {
		if it.Err != nil {
			if errors.Is(it.Err, model.ErrTxNotFound) {
				continue
			}
			return it.Err
		}
		// Mined at this height only: this block, connected in part
		// before a crash and sent again.
		for _, h := range it.Meta.BlockHeights {
			if h < b.height {
				return &chain.CheckError{Hash: b.Hash, Height: b.height, Check: chain.CheckRepeatedTx,
					Reason: fmt.Sprintf("transaction %s was mined at height %d already", it.TxID, h)}
			}
		}
	}
	return nil
}

// indexBlock connects a stored block to the index: a streamed one is read
// whole from the block store first.
func (p *Path) indexBlock(b *pathBlock) error {
	indexed := b
	if b.streamed != nil {
		whole, ok, err := p.blocks.block(b.height, b.Hash)
		if err == nil && !ok {
			err = errors.New("the block store does not hold it")
		}
		if err != nil {
			return fmt.Errorf("indexing block %s at height %d: reading it from the block store: %w", b.Hash, b.height, err)
		}
		indexed = &pathBlock{Block: whole, height: b.height}
	}
	if err := p.index.connect(indexed); err != nil {
		return fmt.Errorf("indexing block %s at height %d: %w", b.Hash, b.height, err)
	}
	p.times.IndexedBlocks++
	p.times.IndexedTxs += uint64(len(indexed.Txs))
	return nil
}

// disconnect is the store's tip block's way back: unindex, disconnect from
// the store, drop the raw block.
func (p *Path) disconnect(ctx context.Context, b *pathBlock) error {
	at := utxo.Tip{Height: b.height, Hash: b.Hash}
	if p.index != nil && p.index.holdsTip(at) {
		if err := timed(&p.times.Index, func() error { return p.index.disconnect(at) }); err != nil {
			return fmt.Errorf("the address index: %w", err)
		}
		passed(stepDisconnect, stepUnindexed, b.height)
	}
	if err := timed(&p.times.Store, func() error { return p.store.DisconnectBlock(ctx, b.utxo()) }); err != nil {
		return err
	}
	passed(stepDisconnect, stepUnstored, b.height)
	if p.blocks != nil && p.blocks.has && p.blocks.last.Height >= b.height {
		if err := timed(&p.times.Keep, func() error { return p.blocks.disconnect(at) }); err != nil {
			return fmt.Errorf("the block store: %w", err)
		}
		passed(stepDisconnect, stepDropped, b.height)
	}
	return nil
}

// level feeds a block the store holds to the derived stores that lack it.
func (p *Path) level(ctx context.Context, chainSum utxo.ChainSummary, b *pathBlock) error {
	held, ok, err := p.store.BlockAt(ctx, b.height)
	if err != nil {
		return err
	}
	if !ok || held.Hash != b.Hash {
		return fmt.Errorf("%w: block %s at height %d is not the store's block there (%s)", ErrOtherChain, b.Hash, b.height, held.Hash)
	}
	for _, d := range p.derived {
		next := d.next(chainSum)
		switch {
		case next > b.height:
			continue // it holds the block
		case next < b.height:
			return &BehindError{Lag: Lag{Derived: d.name(), Next: next}, Height: b.height, Hash: b.Hash}
		}
		if err := d.connect(b); err != nil {
			return fmt.Errorf("%s: block %s at height %d: %w", d.name(), b.Hash, b.height, err)
		}
	}
	return nil
}

// lag is Lag for the store's chain state.
func (p *Path) lag(chainSum utxo.ChainSummary) Lag {
	if !chainSum.HasTip {
		return Lag{}
	}
	lag := Lag{Next: chainSum.Tip.Height + 1}
	var names []string
	for _, d := range p.derived {
		switch n := d.next(chainSum); {
		case n < lag.Next:
			lag.Next, names = n, []string{d.name()}
		case n == lag.Next && n <= chainSum.Tip.Height:
			names = append(names, d.name())
		}
	}
	lag.Derived = strings.Join(names, " and ")
	return lag
}

// tell announces a connected block.
func (p *Path) tell(ctx context.Context, b *pathBlock) {
	if fn := p.announce.Load(); fn != nil {
		(*fn)(ctx, b.utxo())
	}
}

// pathBlock is a checked block at its height, in the forms the stores
// take: held in memory, or streamed, its Block then holding the header
// and size alone.
type pathBlock struct {
	*chain.Block
	height uint32
	// staged is a streamed block's bytes until the block store adopts them.
	staged *blockstore.Staged
	// streamed, for a streamed block, is the block store its transactions
	// are read from once kept.
	streamed *rawBlocks
}

func (b *pathBlock) utxo() utxo.Block {
	if b.streamed == nil {
		return utxo.BlockFromChain(b.Block, b.height)
	}
	header := b.Header
	return utxo.Block{Hash: b.Hash, PrevHash: b.PrevHash(), Height: b.height, Header: &header, Size: b.Size,
		Chunks: b.streamed.chunks(b.height, b.Hash)}
}

// Hold runs fn while no block passes: Connect, ConnectStaged and Reorg
// wait until it returns, so every store the path feeds stands at the same
// block for fn's whole run (a backup, a dump of the set). Everything else
// goes on: the reads of where the stores stand (Next, Lag, Levels) and the
// store's own calls (reads, unmined transactions).
func (p *Path) Hold(fn func() error) error {
	p.still.Lock()
	defer p.still.Unlock()
	return fn()
}
