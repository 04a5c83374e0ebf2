package index

import (
	"bytes"
	"context"
	"math"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/cockroachdb/pebble"
)

// HistoryTx is one transaction in which an address occurs.
type HistoryTx struct {
	TxID   chainhash.Hash
	Height uint32
	// Indexes says where: i >= 0 is output i, i < 0 is input ^i.
	Indexes []int32
}

// History is one page of an address's transactions, newest first.
type History struct {
	Txs        []HistoryTx
	Page       int // 1-based, as Blockbook's API
	TotalPages int
	PageSize   int
	Total      int // transactions in the height range
}

// DefaultPageSize is Blockbook's default page size.
const DefaultPageSize = 1000

// historyCtxEvery is how many blocks History's walk reads between looks at
// its context.
const historyCtxEvery = 256

// History returns page page (1-based; < 1 means 1) of pageSize (<= 0 means
// DefaultPageSize) of the transactions of addrDesc in blocks fromHeight to
// toHeight inclusive (toHeight 0 means no upper limit), newest first; in
// one block, in the order Blockbook stores them. Counting the total walks
// every block of the address in the range; the walk stops with ctx's error
// when ctx ends.
func (ix *Index) History(ctx context.Context, addrDesc []byte, page, pageSize int, fromHeight, toHeight uint32) (*History, error) {
	if page < 1 {
		page = 1
	}
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	if toHeight == 0 {
		toHeight = math.MaxUint32
	}
	h := &History{Page: page, PageSize: pageSize}
	if fromHeight > toHeight {
		return h, nil
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.db == nil {
		return nil, ErrClosed
	}
	// ^height sorts newest first, so the newest block is the lower bound.
	lo := addressKey(addrDesc, toHeight)
	hi := addressKey(addrDesc, fromHeight)
	it, err := ix.db.NewIter(&pebble.IterOptions{LowerBound: lo})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	first := (page - 1) * pageSize
	for n, ok := 0, it.First(); ok && bytes.Compare(it.Key(), hi) <= 0; n, ok = n+1, it.Next() {
		if n%historyCtxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		// A longer addrDesc with addrDesc as its prefix sorts in between;
		// its keys are longer, which is how Blockbook tells them apart.
		if len(it.Key()) != len(lo) {
			continue
		}
		key := it.Key()[1:]
		txs, err := unpackTxIndexes(key, it.Value())
		if err != nil {
			return nil, err
		}
		height := ^(&decoder{buf: key[len(key)-4:]}).uint32be()
		for _, t := range txs {
			if h.Total >= first && len(h.Txs) < pageSize {
				h.Txs = append(h.Txs, HistoryTx{TxID: t.txid, Height: height, Indexes: t.indexes})
			}
			h.Total++
		}
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	h.TotalPages = (h.Total + pageSize - 1) / pageSize
	return h, nil
}

// walkChunkBlocks is how many of an address's blocks WalkHistory reads
// under the index's lock at a time: fn runs without it, so it may query
// the index, and a writer waits for one chunk at most.
const walkChunkBlocks = 256

// WalkHistory calls fn with each transaction of addrDesc in blocks
// fromHeight to toHeight inclusive (toHeight 0 means no upper limit),
// oldest first, and in one block in the order Blockbook stores them,
// until fn says stop or fails (its error is returned). Unlike History it
// counts nothing: a walk that stops early reads only the blocks it
// passed. It stops with ctx's error when ctx ends.
func (ix *Index) WalkHistory(ctx context.Context, addrDesc []byte, fromHeight, toHeight uint32, fn func(HistoryTx) (stop bool, err error)) error {
	if toHeight == 0 {
		toHeight = math.MaxUint32
	}
	for fromHeight <= toHeight {
		if err := ctx.Err(); err != nil {
			return err
		}
		txs, last, done, err := ix.historyChunk(addrDesc, fromHeight, toHeight)
		if err != nil {
			return err
		}
		for _, t := range txs {
			if stop, err := fn(t); stop || err != nil {
				return err
			}
		}
		if done || last == math.MaxUint32 {
			return nil
		}
		fromHeight = last + 1
	}
	return nil
}

// historyChunk reads, oldest first, the transactions of addrDesc in its
// first walkChunkBlocks blocks from fromHeight to toHeight; last is the
// height of the last block read, and done says none is left in the range.
func (ix *Index) historyChunk(addrDesc []byte, fromHeight, toHeight uint32) (txs []HistoryTx, last uint32, done bool, err error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.db == nil {
		return nil, 0, false, ErrClosed
	}
	// ^height sorts newest first: the oldest block's key is the largest,
	// and the byte after it bounds the range just past it.
	newest := addressKey(addrDesc, toHeight)
	past := append(addressKey(addrDesc, fromHeight), 0)
	it, err := ix.db.NewIter(&pebble.IterOptions{LowerBound: newest, UpperBound: past})
	if err != nil {
		return nil, 0, false, err
	}
	defer it.Close()
	blocks := 0
	for ok := it.Last(); ok; ok = it.Prev() {
		// A longer addrDesc with addrDesc as its prefix sorts in between
		// (see History).
		if len(it.Key()) != len(newest) {
			continue
		}
		if blocks == walkChunkBlocks {
			return txs, last, false, it.Error()
		}
		key := it.Key()[1:]
		entries, err := unpackTxIndexes(key, it.Value())
		if err != nil {
			return nil, 0, false, err
		}
		last = ^(&decoder{buf: key[len(key)-4:]}).uint32be()
		for _, t := range entries {
			txs = append(txs, HistoryTx{TxID: t.txid, Height: last, Indexes: t.indexes})
		}
		blocks++
	}
	return txs, last, true, it.Error()
}
