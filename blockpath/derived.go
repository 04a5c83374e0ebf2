package blockpath

import (
	"context"
	"fmt"
	"io"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/blockstore"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/utxo"
)

// derived is a store kept from the store's blocks. The path is its only
// writer, so it remembers its own tip.
type derived interface {
	// name names it in errors and logs ("the address index").
	name() string
	// remedy says what rebuilds it when it cannot be settled.
	remedy() string
	// load reads its tip.
	load() error
	// tip is the last block it holds; has is false while it is empty.
	tip() (t utxo.Tip, has bool)
	// next is the first height of the store's chain it lacks (the store
	// holds a block).
	next(chainSum utxo.ChainSummary) uint32
	// connect adds the block after its tip.
	connect(b *pathBlock) error
	// disconnect removes its tip block, t.
	disconnect(t utxo.Tip) error
}

// settle applies the recovery rule: each derived store is rolled back to
// the store's chain, then the index catches up from the block store.
func (p *Path) settle(ctx context.Context) error {
	chainSum, err := p.store.ChainSummary(ctx)
	if err != nil {
		return err
	}
	for _, d := range p.derived {
		if err := p.rollBack(ctx, chainSum, d); err != nil {
			return err
		}
	}
	return p.catchUpIndex(ctx, chainSum)
}

// rollBack disconnects the blocks d holds above the store's tip or off its
// chain.
func (p *Path) rollBack(ctx context.Context, chainSum utxo.ChainSummary, d derived) error {
	for rolled := 0; ; rolled++ {
		t, has := d.tip()
		onChain := false
		if has && chainSum.HasTip && t.Height <= chainSum.Tip.Height {
			held, ok, err := p.store.BlockAt(ctx, t.Height)
			if err != nil {
				return err
			}
			onChain = ok && held.Hash == t.Hash
		}
		if !has || onChain {
			if rolled > 0 {
				p.log.Warn(fmt.Sprintf("%s held %d blocks off the store's chain (left by a crash); rolled them back", d.name(), rolled),
					"derived", d.name(), "blocks", rolled)
			}
			return nil
		}
		if err := d.disconnect(t); err != nil {
			return fmt.Errorf("%s holds block %s at height %d, which is not on the store's chain, and cannot roll it back: %w; %s",
				d.name(), t.Hash, t.Height, err, d.remedy())
		}
	}
}

// catchUpIndex connects to the index the store's blocks it lacks that the
// block store keeps; the rest come from the feeder (Next).
func (p *Path) catchUpIndex(ctx context.Context, chainSum utxo.ChainSummary) error {
	if p.index == nil || !chainSum.HasTip {
		return nil
	}
	caught := 0
	defer func() {
		if caught > 0 {
			p.log.Info(fmt.Sprintf("the address index caught up %d blocks from the block store", caught), "blocks", caught)
		}
	}()
	for {
		next := p.index.next(chainSum)
		if next > chainSum.Tip.Height {
			return nil
		}
		b, ok, err := p.Kept(ctx, next)
		if err != nil || !ok {
			return err
		}
		if err := p.index.connect(&pathBlock{Block: b, height: next}); err != nil {
			return fmt.Errorf("the address index: catching up block %s at height %d: %w", b.Hash, next, err)
		}
		caught++
	}
}

// rawBlocks is the block store as a derived store.
type rawBlocks struct {
	bs   *blockstore.Store
	last utxo.Tip
	has  bool
}

func (r *rawBlocks) name() string { return "the block store" }

func (r *rawBlocks) remedy() string {
	return "move the block store's directory (DATA/blocks) aside; the blocks that follow fill a new one"
}

func (r *rawBlocks) load() error {
	height, ok := r.bs.Tip()
	if !ok {
		r.last, r.has = utxo.Tip{}, false
		return nil
	}
	l, held, err := r.bs.Location(height)
	if err != nil {
		return fmt.Errorf("the block store: %w", err)
	}
	r.last, r.has = utxo.Tip{Height: height, Hash: l.Hash}, held
	return nil
}

func (r *rawBlocks) tip() (utxo.Tip, bool) { return r.last, r.has }

// next: an empty block store lacks the blocks it is to keep, the store's
// whole chain or, with a retention, the newest that many: nothing tells an
// empty block store that was never fed from one that lost its blocks.
func (r *rawBlocks) next(chainSum utxo.ChainSummary) uint32 {
	if r.has {
		return r.last.Height + 1
	}
	first := firstHeight(chainSum)
	if keep := r.bs.Retention(); keep > 0 && chainSum.Tip.Height+1-first > keep {
		first = chainSum.Tip.Height + 1 - keep
	}
	return first
}

func (r *rawBlocks) connect(b *pathBlock) error {
	if b.staged != nil {
		st := b.staged
		b.staged = nil // adopted or discarded
		if err := r.bs.Adopt(b.height, st); err != nil {
			return err
		}
		return r.load()
	}
	raw := b.Raw
	if raw == nil {
		raw = b.Serialize()
	}
	if err := r.bs.Put(b.height, b.Hash, raw); err != nil {
		return err
	}
	return r.load()
}

// Chunks of a streamed block, read from the block store: each holds
// transactions up to chunkBytes or chunkTxs, whichever comes first (one
// larger transaction makes a chunk of its own).
const (
	chunkBytes = 16 << 20
	chunkTxs   = 10_000
)

// chunks reads the block at height, which must be the one with hash, a
// chunk of transactions at a time (utxo.Block.Chunks).
func (r *rawBlocks) chunks(height uint32, hash chainhash.Hash) func(fn func([]*chain.Tx) error) error {
	return func(fn func([]*chain.Tx) error) error {
		f, held, ok, err := r.bs.OpenBlock(height)
		if err != nil {
			return err
		}
		if !ok || held != hash {
			return fmt.Errorf("the block store does not hold block %s at height %d", hash, height)
		}
		defer f.Close()
		br, err := chain.NewBlockReader(f)
		if err != nil {
			return err
		}
		var chunk []*chain.Tx
		size := 0
		for {
			tx, err := br.Next()
			if err == io.EOF {
				if len(chunk) == 0 {
					return nil
				}
				return fn(chunk)
			}
			if err != nil {
				return fmt.Errorf("reading block %s at height %d from the block store: %w", hash, height, err)
			}
			chunk, size = append(chunk, tx), size+len(tx.Raw)
			if size >= chunkBytes || len(chunk) >= chunkTxs {
				if err := fn(chunk); err != nil {
					return err
				}
				chunk, size = nil, 0
			}
		}
	}
}

func (r *rawBlocks) disconnect(t utxo.Tip) error {
	if err := r.bs.DropFrom(t.Height); err != nil {
		return err
	}
	return r.load()
}

// block returns the block at height when the block store holds it with
// that hash.
func (r *rawBlocks) block(height uint32, hash chainhash.Hash) (*chain.Block, bool, error) {
	raw, held, ok, err := r.bs.Block(height)
	if err != nil || !ok || held != hash {
		return nil, false, err
	}
	b, err := chain.ParseBlock(raw)
	if err != nil {
		return nil, false, fmt.Errorf("the block store's block %s at height %d: %w", hash, height, err)
	}
	return b, true, nil
}

// addressIndex is the address index as a derived store, written block by
// block or, for an import, in bulk; a bulk import disconnects its blocks
// itself and goes on (index.Bulk.Disconnect).
type addressIndex struct {
	ix   *index.Index
	bulk *index.Bulk
	last utxo.Tip
	has  bool
}

func (a *addressIndex) name() string { return "the address index" }

func (a *addressIndex) remedy() string {
	return "move the index's directory (DATA/index) aside and rebuild it with 'utxostore import --index FILE...'"
}

func (a *addressIndex) load() error {
	best, ok, err := a.ix.BestBlock()
	if err != nil {
		return fmt.Errorf("reading the address index's tip: %w", err)
	}
	a.last, a.has = utxo.Tip{Height: best.Height, Hash: best.Hash}, ok
	return nil
}

func (a *addressIndex) tip() (utxo.Tip, bool) { return a.last, a.has }

// next: an empty index starts at the store's first block, since its
// balances sum the whole chain.
func (a *addressIndex) next(chainSum utxo.ChainSummary) uint32 {
	if !a.has {
		return firstHeight(chainSum)
	}
	return a.last.Height + 1
}

func (a *addressIndex) holdsTip(t utxo.Tip) bool { return a.has && a.last == t }

func (a *addressIndex) connect(b *pathBlock) error {
	ib := indexed(b)
	var err error
	if a.bulk != nil {
		err = a.bulk.Connect(ib)
	} else {
		err = a.ix.ConnectBlock(ib)
	}
	if err != nil {
		return err
	}
	a.last, a.has = utxo.Tip{Height: b.height, Hash: b.Hash}, true
	return nil
}

func (a *addressIndex) disconnect(t utxo.Tip) error {
	var err error
	if a.bulk != nil {
		err = a.bulk.Disconnect(t.Height, t.Hash)
	} else {
		err = a.ix.DisconnectBlock(t.Height, t.Hash)
	}
	if err != nil {
		return err
	}
	return a.load()
}

func (a *addressIndex) beginBulk(every int) error {
	bulk, err := a.ix.BeginBulk(every)
	if err != nil {
		return fmt.Errorf("the address index: %w", err)
	}
	a.bulk = bulk
	return nil
}

// flush writes what the bulk holds.
func (a *addressIndex) flush() error {
	if err := a.bulk.Flush(); err != nil {
		return fmt.Errorf("the address index: %w", err)
	}
	return nil
}

// endBulk writes what the bulk holds and ends it.
func (a *addressIndex) endBulk() error {
	if a.bulk == nil {
		return nil
	}
	err := a.bulk.Close()
	a.bulk = nil
	if err != nil {
		return fmt.Errorf("the address index: %w", err)
	}
	return nil
}

// indexed is a block in the address index's form.
func indexed(b *pathBlock) *index.Block {
	msgs := make([]*wire.MsgTx, len(b.Txs))
	ids := make([]chainhash.Hash, len(b.Txs))
	for i, tx := range b.Txs {
		msgs[i], ids[i] = tx.Msg, tx.ID
	}
	ib := index.FromWire(b.height, &b.Header, b.Size, msgs, ids)
	ib.Hash = b.Hash
	return ib
}

// firstHeight is the height of the store's first connected block, from
// which a derived store holds the chain: a store loaded from a snapshot has
// none of the blocks below it.
func firstHeight(chainSum utxo.ChainSummary) uint32 { return chainSum.First }
