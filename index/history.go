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
