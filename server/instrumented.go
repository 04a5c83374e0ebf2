package server

import (
	"context"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/blockbook"
	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/electrum"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// Instrumented decorates a Backend: every method counts and times itself
// and counts its errors by code, and so does every read of the address
// index and the block store it hands out. Reads of cached values
// (GetBlockHeight, GetMedianBlockTime, Tip) are counted too, so the
// counters show every call.
type Instrumented struct {
	next Backend
	m    *Metrics
	// externalAbove is the transaction size above which Create goes to the
	// blob store (utxo.Options.MaxTxSizeInStore); 0 means every create does.
	externalAbove int
}

// NewInstrumented wraps next.
func NewInstrumented(next Backend, m *Metrics, externalAbove int) *Instrumented {
	return &Instrumented{next: next, m: m, externalAbove: externalAbove}
}

var _ Backend = (*Instrumented)(nil)

func (s *Instrumented) Health(ctx context.Context) (err error) {
	defer func(start time.Time) { s.m.observe("Health", start, err) }(time.Now())
	return s.next.Health(ctx)
}

func (s *Instrumented) Create(ctx context.Context, tx *chain.Tx, blockHeight uint32, opts ...utxo.CreateOption) (meta *utxo.Meta, err error) {
	start := time.Now()
	defer func() {
		s.m.observe("Create", start, err)
		if tx != nil && tx.Size() > s.externalAbove {
			s.m.external.Observe(time.Since(start).Seconds())
		}
	}()
	return s.next.Create(ctx, tx, blockHeight, opts...)
}

func (s *Instrumented) Get(ctx context.Context, txid chainhash.Hash, fields ...utxo.Field) (meta *utxo.Meta, err error) {
	defer func(start time.Time) { s.m.observe("Get", start, err) }(time.Now())
	return s.next.Get(ctx, txid, fields...)
}

func (s *Instrumented) Delete(ctx context.Context, txid chainhash.Hash) (err error) {
	defer func(start time.Time) { s.m.observe("Delete", start, err) }(time.Now())
	return s.next.Delete(ctx, txid)
}

func (s *Instrumented) GetSpend(ctx context.Context, spend *utxo.Spend) (r *utxo.SpendResponse, err error) {
	defer func(start time.Time) { s.m.observe("GetSpend", start, err) }(time.Now())
	return s.next.GetSpend(ctx, spend)
}

func (s *Instrumented) Spend(ctx context.Context, tx *chain.Tx, opts ...utxo.SpendOption) (spends []*utxo.Spend, err error) {
	defer func(start time.Time) { s.m.observe("Spend", start, err) }(time.Now())
	return s.next.Spend(ctx, tx, opts...)
}

func (s *Instrumented) Unspend(ctx context.Context, spends []*utxo.Spend, flagAsLocked bool) (err error) {
	defer func(start time.Time) { s.m.observe("Unspend", start, err) }(time.Now())
	return s.next.Unspend(ctx, spends, flagAsLocked)
}

func (s *Instrumented) SetMinedMulti(ctx context.Context, txids []chainhash.Hash, info model.MinedBlockInfo) (ids map[chainhash.Hash][]uint32, err error) {
	defer func(start time.Time) { s.m.observe("SetMinedMulti", start, err) }(time.Now())
	return s.next.SetMinedMulti(ctx, txids, info)
}

func (s *Instrumented) MarkTransactionsOnLongestChain(ctx context.Context, txids []chainhash.Hash, onLongestChain bool) (err error) {
	defer func(start time.Time) { s.m.observe("MarkTransactionsOnLongestChain", start, err) }(time.Now())
	return s.next.MarkTransactionsOnLongestChain(ctx, txids, onLongestChain)
}

func (s *Instrumented) SetLocked(ctx context.Context, txids []chainhash.Hash, locked bool) (err error) {
	defer func(start time.Time) { s.m.observe("SetLocked", start, err) }(time.Now())
	return s.next.SetLocked(ctx, txids, locked)
}

func (s *Instrumented) GetUnminedTxIterator(ctx context.Context) (it utxo.UnminedTxIterator, err error) {
	defer func(start time.Time) { s.m.observe("GetUnminedTxIterator", start, err) }(time.Now())
	return s.next.GetUnminedTxIterator(ctx)
}

func (s *Instrumented) QueryOldUnminedTransactions(ctx context.Context, cutoffHeight uint32) (txids []chainhash.Hash, err error) {
	defer func(start time.Time) { s.m.observe("QueryOldUnminedTransactions", start, err) }(time.Now())
	return s.next.QueryOldUnminedTransactions(ctx, cutoffHeight)
}

func (s *Instrumented) PreserveTransactions(ctx context.Context, txids []chainhash.Hash, preserveUntil uint32) (err error) {
	defer func(start time.Time) { s.m.observe("PreserveTransactions", start, err) }(time.Now())
	return s.next.PreserveTransactions(ctx, txids, preserveUntil)
}

func (s *Instrumented) ProcessExpiredPreservations(ctx context.Context, currentHeight uint32) (err error) {
	defer func(start time.Time) { s.m.observe("ProcessExpiredPreservations", start, err) }(time.Now())
	return s.next.ProcessExpiredPreservations(ctx, currentHeight)
}

func (s *Instrumented) BatchDecorate(ctx context.Context, items []*utxo.UnresolvedMetaData, fields ...utxo.Field) (err error) {
	defer func(start time.Time) { s.m.observe("BatchDecorate", start, err) }(time.Now())
	return s.next.BatchDecorate(ctx, items, fields...)
}

func (s *Instrumented) PreviousOutputsDecorate(ctx context.Context, tx *chain.Tx) (outs []*wire.TxOut, err error) {
	defer func(start time.Time) { s.m.observe("PreviousOutputsDecorate", start, err) }(time.Now())
	return s.next.PreviousOutputsDecorate(ctx, tx)
}

func (s *Instrumented) FreezeUTXOs(ctx context.Context, spends []*utxo.Spend) (err error) {
	defer func(start time.Time) { s.m.observe("FreezeUTXOs", start, err) }(time.Now())
	return s.next.FreezeUTXOs(ctx, spends)
}

func (s *Instrumented) UnFreezeUTXOs(ctx context.Context, spends []*utxo.Spend) (err error) {
	defer func(start time.Time) { s.m.observe("UnFreezeUTXOs", start, err) }(time.Now())
	return s.next.UnFreezeUTXOs(ctx, spends)
}

func (s *Instrumented) ReAssignUTXO(ctx context.Context, old *utxo.Spend, replacement *utxo.Spend) (err error) {
	defer func(start time.Time) { s.m.observe("ReAssignUTXO", start, err) }(time.Now())
	return s.next.ReAssignUTXO(ctx, old, replacement)
}

func (s *Instrumented) GetCounterConflicting(ctx context.Context, txid chainhash.Hash) (txids []chainhash.Hash, err error) {
	defer func(start time.Time) { s.m.observe("GetCounterConflicting", start, err) }(time.Now())
	return s.next.GetCounterConflicting(ctx, txid)
}

func (s *Instrumented) GetConflictingChildren(ctx context.Context, txid chainhash.Hash) (txids []chainhash.Hash, err error) {
	defer func(start time.Time) { s.m.observe("GetConflictingChildren", start, err) }(time.Now())
	return s.next.GetConflictingChildren(ctx, txid)
}

func (s *Instrumented) SetConflicting(ctx context.Context, txids []chainhash.Hash, conflicting bool) (spends []*utxo.Spend, affected []chainhash.Hash, err error) {
	defer func(start time.Time) { s.m.observe("SetConflicting", start, err) }(time.Now())
	return s.next.SetConflicting(ctx, txids, conflicting)
}

func (s *Instrumented) SetBlockHeight(ctx context.Context, height uint32) (err error) {
	defer func(start time.Time) { s.m.observe("SetBlockHeight", start, err) }(time.Now())
	return s.next.SetBlockHeight(ctx, height)
}

func (s *Instrumented) GetBlockHeight() uint32 {
	defer s.m.observe("GetBlockHeight", time.Now(), nil)
	return s.next.GetBlockHeight()
}

func (s *Instrumented) SetMedianBlockTime(ctx context.Context, t uint32) (err error) {
	defer func(start time.Time) { s.m.observe("SetMedianBlockTime", start, err) }(time.Now())
	return s.next.SetMedianBlockTime(ctx, t)
}

func (s *Instrumented) GetMedianBlockTime() uint32 {
	defer s.m.observe("GetMedianBlockTime", time.Now(), nil)
	return s.next.GetMedianBlockTime()
}

func (s *Instrumented) Close() (err error) {
	defer func(start time.Time) { s.m.observe("Close", start, err) }(time.Now())
	return s.next.Close()
}

func (s *Instrumented) ConnectBlock(ctx context.Context, b *chain.Block, height uint32) (err error) {
	s.m.observeBatch(len(b.Txs))
	defer func(start time.Time) { s.m.observe("ConnectBlock", start, err) }(time.Now())
	return s.next.ConnectBlock(ctx, b, height)
}

func (s *Instrumented) NextHeight(ctx context.Context) (next uint32, err error) {
	defer func(start time.Time) { s.m.observe("NextHeight", start, err) }(time.Now())
	return s.next.NextHeight(ctx)
}

func (s *Instrumented) Levels(ctx context.Context) (l blockpath.Levels, err error) {
	defer func(start time.Time) { s.m.observe("Levels", start, err) }(time.Now())
	return s.next.Levels(ctx)
}

// AddressIndex implements Backend: its reads are counted and timed too,
// as "index.Balance" and so on.
func (s *Instrumented) AddressIndex() blockbook.AddressIndexReads {
	next := s.next.AddressIndex()
	if next == nil {
		return nil
	}
	return instrumentedIndex{next: next, m: s.m}
}

// BlockStore implements Backend: its reads are counted and timed too, as
// "blockstore.Block" and so on.
func (s *Instrumented) BlockStore() blockbook.BlockStoreReads {
	next := s.next.BlockStore()
	if next == nil {
		return nil
	}
	return instrumentedBlocks{next: next, m: s.m}
}

// Scripts implements Backend: the reads of the index's Electrum columns
// are counted and timed too, as "index.Script" and "index.PaysP2PK".
func (s *Instrumented) Scripts() electrum.ScriptReads {
	next := s.next.Scripts()
	if next == nil {
		return nil
	}
	return instrumentedScripts{next: next, m: s.m}
}

func (s *Instrumented) Tip(ctx context.Context) (tip utxo.Tip, ok bool, err error) {
	defer func(start time.Time) { s.m.observe("Tip", start, err) }(time.Now())
	return s.next.Tip(ctx)
}

// Changes implements Backend; it is a counter read, not an operation.
func (s *Instrumented) Changes() uint64 { return s.next.Changes() }

func (s *Instrumented) ChainSummary(ctx context.Context) (c utxo.ChainSummary, err error) {
	defer func(start time.Time) { s.m.observe("ChainSummary", start, err) }(time.Now())
	return s.next.ChainSummary(ctx)
}

func (s *Instrumented) Summary(ctx context.Context) (sum utxo.Summary, err error) {
	defer func(start time.Time) { s.m.observe("Summary", start, err) }(time.Now())
	return s.next.Summary(ctx)
}

func (s *Instrumented) SetStats(ctx context.Context) (sum coinstats.Summary, err error) {
	defer func(start time.Time) { s.m.observe("SetStats", start, err) }(time.Now())
	return s.next.SetStats(ctx)
}

func (s *Instrumented) BlockAt(ctx context.Context, height uint32) (b utxo.BlockInfo, ok bool, err error) {
	defer func(start time.Time) { s.m.observe("BlockAt", start, err) }(time.Now())
	return s.next.BlockAt(ctx, height)
}

// instrumentedIndex counts and times the reads of the address index.
type instrumentedIndex struct {
	next blockbook.AddressIndexReads
	m    *Metrics
}

func (x instrumentedIndex) Balance(addrDesc []byte) (b index.Balance, err error) {
	defer func(start time.Time) { x.m.observe("index.Balance", start, err) }(time.Now())
	return x.next.Balance(addrDesc)
}

func (x instrumentedIndex) UTXOs(addrDesc []byte) (utxos []index.Utxo, err error) {
	defer func(start time.Time) { x.m.observe("index.UTXOs", start, err) }(time.Now())
	return x.next.UTXOs(addrDesc)
}

func (x instrumentedIndex) History(ctx context.Context, addrDesc []byte, page, pageSize int, fromHeight, toHeight uint32) (h *index.History, err error) {
	defer func(start time.Time) { x.m.observe("index.History", start, err) }(time.Now())
	return x.next.History(ctx, addrDesc, page, pageSize, fromHeight, toHeight)
}

func (x instrumentedIndex) WalkHistory(ctx context.Context, addrDesc []byte, fromHeight, toHeight uint32, fn func(index.HistoryTx) (bool, error)) (err error) {
	defer func(start time.Time) { x.m.observe("index.WalkHistory", start, err) }(time.Now())
	return x.next.WalkHistory(ctx, addrDesc, fromHeight, toHeight, fn)
}

func (x instrumentedIndex) TxAddresses(txid chainhash.Hash) (ta index.TxAddresses, ok bool, err error) {
	defer func(start time.Time) { x.m.observe("index.TxAddresses", start, err) }(time.Now())
	return x.next.TxAddresses(txid)
}

func (x instrumentedIndex) BestBlock() (bi index.BlockInfo, ok bool, err error) {
	defer func(start time.Time) { x.m.observe("index.BestBlock", start, err) }(time.Now())
	return x.next.BestBlock()
}

func (x instrumentedIndex) BlockInfo(height uint32) (bi index.BlockInfo, ok bool, err error) {
	defer func(start time.Time) { x.m.observe("index.BlockInfo", start, err) }(time.Now())
	return x.next.BlockInfo(height)
}

// instrumentedBlocks counts and times the reads of the block store.
type instrumentedBlocks struct {
	next blockbook.BlockStoreReads
	m    *Metrics
}

func (x instrumentedBlocks) Block(height uint32) (raw []byte, hash chainhash.Hash, ok bool, err error) {
	defer func(start time.Time) { x.m.observe("blockstore.Block", start, err) }(time.Now())
	return x.next.Block(height)
}

func (x instrumentedBlocks) HeightOf(hash chainhash.Hash) (height uint32, ok bool, err error) {
	defer func(start time.Time) { x.m.observe("blockstore.HeightOf", start, err) }(time.Now())
	return x.next.HeightOf(hash)
}

func (x instrumentedBlocks) DiskBytes() (n int64, err error) {
	defer func(start time.Time) { x.m.observe("blockstore.DiskBytes", start, err) }(time.Now())
	return x.next.DiskBytes()
}

// instrumentedScripts counts and times the reads of the index's Electrum
// columns.
type instrumentedScripts struct {
	next electrum.ScriptReads
	m    *Metrics
}

func (x instrumentedScripts) Script(h index.ScriptHash) (script []byte, ok bool, err error) {
	defer func(start time.Time) { x.m.observe("index.Script", start, err) }(time.Now())
	return x.next.Script(h)
}

func (x instrumentedScripts) PaysP2PK(txid chainhash.Hash, vout uint32, input bool) (p2pk bool, err error) {
	defer func(start time.Time) { x.m.observe("index.PaysP2PK", start, err) }(time.Now())
	return x.next.PaysP2PK(txid, vout, input)
}
