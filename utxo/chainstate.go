package utxo

import (
	"context"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// chainState is the block processor's view of the chain, kept in the
// engine's metadata as one value and written at every block boundary. The
// block height lives in it too, so the tip and the height change in one
// write: a crash leaves both of the last block, or both of the one before.
type chainState struct {
	// Height is the longest chain's height: the tip's after a block is
	// connected or disconnected, or what SetBlockHeight last set.
	Height      uint32
	HasTip      bool
	TipHeight   uint32
	TipHash     chainhash.Hash
	NextBlockID uint32
	// Blocks and Txs count the blocks and transactions on the current
	// chain, for the summary.
	Blocks uint64
	Txs    uint64
	// First is the height of the first block connected to the store: 0,
	// or an import's --start-height, or for a store loaded from a UTXO
	// snapshot the block after the snapshot's, of whose blocks it knows
	// only the last one's hash.
	First uint32
	// TipBlock is what the store remembers of the tip block. It lives
	// here, not in a record of its own, so that it changes in the same
	// write as the tip: a crash never leaves a tip without its metadata,
	// nor metadata above the tip. A block's own record (blockMetaName) is
	// written once the next block is connected on top of it.
	TipBlock *connectedBlock
	// Stats are the UTXO set's statistics (coinstats.Stats' binary form;
	// see setstats.go) at the block StatsBehind blocks below the tip: the
	// changes of the blocks above it are worked out in the background
	// (statsworker.go).
	Stats       []byte
	StatsBehind uint32
}

// connectedBlock is what the store remembers of each connected block so it
// can be disconnected: its id, hash and parent, and the transactions the
// block made conflicting (restored if the block is disconnected).
type connectedBlock struct {
	Hash        chainhash.Hash
	PrevHash    chainhash.Hash
	ID          uint32
	Txs         int
	Conflicting []chainhash.Hash
	// Header fields and size, when the block came with them.
	Size       int64
	Time       int64
	Version    int32
	MerkleRoot *chainhash.Hash
	Bits       uint32
	Nonce      uint32
}

const metaChain = "chain"

func blockMetaName(height uint32) string {
	return fmt.Sprintf("block/%010d", height)
}

// Tip is the last connected block.
type Tip struct {
	Height uint32
	Hash   chainhash.Hash
}

// Tip returns the last connected block; ok is false for an empty store.
// An error reading the chain state is returned, never taken for an empty
// store.
func (db *DB) Tip(ctx context.Context) (tip Tip, ok bool, err error) {
	cs, err := db.loadChainState(ctx)
	if err != nil || !cs.HasTip {
		return Tip{}, false, err
	}
	return Tip{Height: cs.TipHeight, Hash: cs.TipHash}, true, nil
}

func (db *DB) loadChainState(ctx context.Context) (chainState, error) {
	var cs chainState
	raw, err := db.eng.GetMeta(ctx, metaChain)
	if err != nil {
		return cs, storageErr("reading the chain state", err)
	}
	if raw == nil {
		return chainState{NextBlockID: 1}, nil
	}
	if err := cs.unmarshal(raw); err != nil {
		return cs, fmt.Errorf("the store's chain state is damaged: %w", err)
	}
	return cs, nil
}

func (db *DB) saveChainState(ctx context.Context, cs chainState) error {
	return storageErr("writing the chain state", db.eng.PutMeta(ctx, metaChain, cs.marshal()))
}

// BlockInfo describes a block of the store's current chain. The header
// fields and size are zero when the block was connected without them.
type BlockInfo struct {
	Hash     chainhash.Hash
	PrevHash chainhash.Hash
	// ID is the block id the store gave it (MinedBlockInfo.BlockID).
	ID   uint32
	Txs  int
	Size int64
	// Time is the header's timestamp in unix seconds.
	Time       int64
	Version    int32
	MerkleRoot chainhash.Hash
	Bits       uint32
	Nonce      uint32
}

// BlockAt returns the block of the current chain at height; ok is false
// when the chain has no block there.
func (db *DB) BlockAt(ctx context.Context, height uint32) (info BlockInfo, ok bool, err error) {
	cs, err := db.loadChainState(ctx)
	if err != nil || !cs.HasTip || height > cs.TipHeight {
		return BlockInfo{}, false, err // metadata above the tip is a disconnected block's
	}
	b, err := db.blockOf(ctx, cs, height)
	if errors.Is(err, errNoBlock) {
		return BlockInfo{}, false, nil
	}
	if err != nil {
		return BlockInfo{}, false, err
	}
	info = BlockInfo{Hash: b.Hash, PrevHash: b.PrevHash, ID: b.ID, Txs: b.Txs, Size: b.Size,
		Time: b.Time, Version: b.Version, Bits: b.Bits, Nonce: b.Nonce}
	if b.MerkleRoot != nil {
		info.MerkleRoot = *b.MerkleRoot
	}
	return info, true, nil
}

// ChainSummary is the part of Summary that the chain state holds: the tip
// and the counts of blocks and transactions on the current chain.
type ChainSummary struct {
	Tip Tip
	// HasTip is false for a store that holds no block.
	HasTip bool
	Blocks uint64
	Txs    uint64
	// First is the height of the first block connected to the store; a
	// store loaded from a snapshot knows no block below it but the
	// snapshot's own, its tip until then.
	First uint32
}

// ChainSummary returns the tip and the counts of the current chain from one
// read of the chain state, so they describe the same block, without walking
// the records as Summary does.
func (db *DB) ChainSummary(ctx context.Context) (ChainSummary, error) {
	cs, err := db.loadChainState(ctx)
	if err != nil {
		return ChainSummary{}, err
	}
	return cs.summary(), nil
}

// summary is the chain state's ChainSummary.
func (cs chainState) summary() ChainSummary {
	return ChainSummary{Tip: Tip{Height: cs.TipHeight, Hash: cs.TipHash}, HasTip: cs.HasTip, Blocks: cs.Blocks, Txs: cs.Txs, First: cs.First}
}

// CheckExtends refuses, with ErrNotTip, block hash at height, whose parent
// is prev, unless it extends the chain s summarises: on a store that holds
// a block, it is at the next height, and its parent, when it names one, is
// the tip. ConnectBlock applies it; a caller that keeps the block
// elsewhere first (blockpath.Path) asks it before.
func (s ChainSummary) CheckExtends(hash, prev chainhash.Hash, height uint32) error {
	if s.HasTip && (height != s.Tip.Height+1 || (prev != s.Tip.Hash && prev != chainhash.Hash{})) {
		return fmt.Errorf("%w: block %s at height %d, parent %s; the tip is %s at height %d",
			ErrNotTip, hash, height, prev, s.Tip.Hash, s.Tip.Height)
	}
	return nil
}

var errNoBlock = errors.New("no block at that height")

// blockOf returns what the store remembers of the chain's block at height,
// at most cs's tip: the tip's from the chain state, the others' from their
// records.
func (db *DB) blockOf(ctx context.Context, cs chainState, height uint32) (*connectedBlock, error) {
	if cs.HasTip && height == cs.TipHeight {
		if cs.TipBlock == nil {
			return nil, errors.New("the store's chain state lacks its tip block's metadata: it is damaged")
		}
		return cs.TipBlock, nil
	}
	return db.loadBlock(ctx, height)
}

func (db *DB) loadBlock(ctx context.Context, height uint32) (*connectedBlock, error) {
	raw, err := db.eng.GetMeta(ctx, blockMetaName(height))
	if err != nil {
		return nil, storageErr("reading block metadata", err)
	}
	if len(raw) == 0 { // never connected, or disconnected (cleared)
		return nil, fmt.Errorf("%w: the store has no record of a block at height %d", errNoBlock, height)
	}
	var b connectedBlock
	if err := b.unmarshal(raw); err != nil {
		return nil, fmt.Errorf("block metadata at height %d is damaged: %w", height, err)
	}
	return &b, nil
}

func (db *DB) saveBlock(ctx context.Context, height uint32, b *connectedBlock) error {
	return storageErr("writing block metadata", db.eng.PutMeta(ctx, blockMetaName(height), b.marshal()))
}
