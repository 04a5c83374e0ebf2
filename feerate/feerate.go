// Package feerate estimates the fee rate a transaction needs to be mined
// within a number of blocks, from what the store holds: the fee rates of
// the transactions in its recent blocks and in its mempool (its unmined
// transactions). It needs no node. Blockbook's estimatefee and the
// Electrum protocol's blockchain.estimatefee both answer from one
// Estimator; mempool.get_fee_histogram from Histogram.
//
// # Method
//
// A rate is satoshis per 1,000 virtual bytes (sat/kvB). For a target of N
// blocks (1 to MaxTarget) the estimate is the highest of three rates:
//
//   - the relay floor, MinRelay (1 sat/vB, what nodes relay by default);
//   - the mempool's: its transactions sorted by fee rate, highest first,
//     fill N blocks of BlockVSize virtual bytes; the rate of the first
//     transaction that does not fit is what a new one must beat to be in
//     those N blocks if nothing else arrives (none when the mempool fits);
//   - the recent blocks': for each of the last 2N blocks (at least 6, at
//     most 144), the rate below which the cheapest tenth of its
//     transactions' virtual size paid (an empty block: none); the median
//     of those. It keeps an estimate up when the mempool was just emptied
//     by a block and is refilling.
package feerate

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
)

// Rate is a fee rate in satoshis per 1,000 virtual bytes.
type Rate uint64

// BTCPerKB is the rate as Blockbook and bitcoind print it: BTC per
// 1,000 (virtual) bytes, eight decimals.
func (r Rate) BTCPerKB() string { return fmt.Sprintf("%d.%08d", r/1e8, r%1e8) }

// Float is the rate in BTC per 1,000 virtual bytes, as the Electrum
// protocol answers it.
func (r Rate) Float() float64 { return float64(r) / 1e8 }

const (
	// MinRelay is the lowest estimate: 1 sat/vB, the default minimum
	// relay fee of Bitcoin nodes.
	MinRelay Rate = 1000
	// BlockVSize is the virtual size of a full block (4,000,000 weight).
	BlockVSize = 1_000_000
	// MaxTarget is the largest target estimated; a larger one is
	// estimated as this (Bitcoin Core's longest horizon).
	MaxTarget = 1008
	// minWindow and maxWindow bound the recent blocks read.
	minWindow, maxWindow = 6, 144
	// cheapestShare is the part of a block's virtual size, cheapest
	// first, whose top rate stands for the block: one tenth.
	cheapestShare = 10
)

// Tx is what a fee rate needs of a transaction.
type Tx struct {
	Fee   uint64 // satoshis
	VSize uint64 // virtual bytes (weight / 4, rounded up)
}

// Of is a transaction's fee and virtual size, given what its inputs bring
// (in, satoshis): what they bring less what its outputs take. ok is false
// when the inputs bring less, as when an input's value is unknown.
func Of(tx *wire.MsgTx, in uint64) (t Tx, ok bool) {
	var out uint64
	for _, o := range tx.TxOut {
		out += uint64(o.Value)
	}
	if in < out {
		return Tx{}, false
	}
	return Tx{Fee: in - out, VSize: VSize(tx)}, true
}

// VSize is a transaction's virtual size: its weight over four, rounded up.
func VSize(tx *wire.MsgTx) uint64 {
	return uint64((blockchain.GetTransactionWeight(btcutil.NewTx(tx)) + 3) / 4)
}

// Rate is the transaction's fee rate.
func (t Tx) Rate() Rate {
	if t.VSize == 0 {
		return 0
	}
	return Rate(t.Fee * 1000 / t.VSize)
}

// Source is what an Estimator reads.
type Source interface {
	// TipHeight is the height of the store's tip; ok is false when it
	// holds no block.
	TipHeight(ctx context.Context) (height uint32, ok bool, err error)
	// BlockTxs returns the fees and sizes of the transactions of the
	// block at height, its coinbase left out, with the block's hash; ok
	// is false when the block or its transactions' fees are not held.
	BlockTxs(ctx context.Context, height uint32) (hash chainhash.Hash, txs []Tx, ok bool, err error)
	// BlockHash is the hash of the block at height, without reading the
	// block; ok is false when the source does not know it.
	BlockHash(ctx context.Context, height uint32) (hash chainhash.Hash, ok bool, err error)
	// Mempool returns the fees and sizes of the unmined transactions.
	Mempool(ctx context.Context) ([]Tx, error)
}

// Estimator estimates fee rates from a Source, keeping each recent
// block's rate so that a block is read once.
type Estimator struct {
	src Source

	mu     sync.Mutex
	blocks map[uint32]blockRate // by height
}

type blockRate struct {
	hash chainhash.Hash
	rate Rate
	held bool // false when the source does not hold the block
}

// New is an Estimator over src.
func New(src Source) *Estimator {
	return &Estimator{src: src, blocks: map[uint32]blockRate{}}
}

// Estimate is the fee rate for confirmation within target blocks (see
// the package's doc for the method). A target under 1 is 1, one over
// MaxTarget is MaxTarget.
func (e *Estimator) Estimate(ctx context.Context, target int) (Rate, error) {
	target = min(max(target, 1), MaxTarget)
	mempool, err := e.src.Mempool(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading the mempool: %w", err)
	}
	recent, err := e.recentRate(ctx, min(max(2*target, minWindow), maxWindow))
	if err != nil {
		return 0, err
	}
	return max(MinRelay, mempoolRate(mempool, uint64(target)*BlockVSize), recent), nil
}

// mempoolRate is the rate of the first transaction, highest rate first,
// past room virtual bytes; 0 when they all fit.
func mempoolRate(txs []Tx, room uint64) Rate {
	sorted := byRateDesc(txs)
	var used uint64
	for _, t := range sorted {
		used += t.VSize
		if used > room {
			return t.Rate()
		}
	}
	return 0
}

func byRateDesc(txs []Tx) []Tx {
	sorted := append([]Tx(nil), txs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Rate() > sorted[j].Rate() })
	return sorted
}

// recentRate is the median of the rates of the last window blocks held.
func (e *Estimator) recentRate(ctx context.Context, window int) (Rate, error) {
	tip, ok, err := e.src.TipHeight(ctx)
	if err != nil || !ok {
		return 0, err
	}
	var rates []Rate
	for h := int64(tip); h >= 0 && h > int64(tip)-int64(window); h-- {
		br, err := e.blockRate(ctx, uint32(h))
		if err != nil {
			return 0, err
		}
		if br.held {
			rates = append(rates, br.rate)
		}
	}
	e.forgetBelow(tip, window)
	if len(rates) == 0 {
		return 0, nil
	}
	sort.Slice(rates, func(i, j int) bool { return rates[i] < rates[j] })
	return rates[(len(rates)-1)/2], nil
}

// blockRate is the block at height's rate: kept from an earlier read
// while the block there is the same, which its hash alone tells, so the
// block is read once. A block not held is read again each time: its
// transactions may be indexed by the next estimate.
func (e *Estimator) blockRate(ctx context.Context, height uint32) (blockRate, error) {
	hash, named, err := e.src.BlockHash(ctx, height)
	if err != nil {
		return blockRate{}, fmt.Errorf("reading block %d's hash: %w", height, err)
	}
	e.mu.Lock()
	kept, known := e.blocks[height]
	e.mu.Unlock()
	if named && known && kept.hash == hash {
		return kept, nil
	}
	read, txs, ok, err := e.src.BlockTxs(ctx, height)
	if err != nil {
		return blockRate{}, fmt.Errorf("reading block %d: %w", height, err)
	}
	br := blockRate{hash: read, held: ok, rate: cheapestRate(txs)}
	e.mu.Lock()
	if ok {
		e.blocks[height] = br
	} else {
		delete(e.blocks, height)
	}
	e.mu.Unlock()
	return br, nil
}

// cheapestRate is the rate below which the cheapest tenth of the
// transactions' virtual size paid; 0 for no transactions.
func cheapestRate(txs []Tx) Rate {
	sorted := byRateDesc(txs)
	var total uint64
	for _, t := range sorted {
		total += t.VSize
	}
	var cheapest uint64
	for i := len(sorted) - 1; i >= 0; i-- {
		cheapest += sorted[i].VSize
		if cheapest*cheapestShare >= total {
			return sorted[i].Rate()
		}
	}
	return 0
}

// forgetBelow drops the kept rates of blocks out of the largest window.
func (e *Estimator) forgetBelow(tip uint32, window int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for h := range e.blocks {
		if h > tip || int64(h) <= int64(tip)-int64(max(window, maxWindow)) {
			delete(e.blocks, h)
		}
	}
}

// Bin is one bar of a fee histogram: the virtual size of the transactions
// paying Rate or more but less than the previous bin's rate.
type Bin struct {
	Rate  Rate
	VSize uint64
}

// firstBin and binGrowth shape Histogram: each bin holds at least
// firstBin virtual bytes, and each next at least 10% more, so the
// histogram of any mempool has a few dozen bins.
const (
	firstBin  = 100_000
	binGrowth = 1.1
)

// Histogram is the mempool's fee histogram, highest rate first, as the
// Electrum protocol's mempool.get_fee_histogram gives it: a bin closes
// once it holds its size, at the rate of its cheapest transaction.
func Histogram(txs []Tx) []Bin {
	var bins []Bin
	size := float64(firstBin)
	var held uint64
	sorted := byRateDesc(txs)
	for i, t := range sorted {
		held += t.VSize
		if float64(held) >= size || i == len(sorted)-1 {
			bins = append(bins, Bin{Rate: t.Rate(), VSize: held})
			held = 0
			size *= binGrowth
		}
	}
	return bins
}
