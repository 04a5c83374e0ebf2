package blockbook

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/feerate"
	"github.com/utxostore/utxostore/internal/httpreply"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// Fees is the fee estimator the API answers estimatefee from, over the
// store's recent blocks and mempool (package feerate); the daemon's other
// APIs estimate with it too.
func (a *API) Fees() *feerate.Estimator { return a.fees }

// feeSource is what the estimator reads: the recent blocks from the block
// store, their transactions' fees from the address index's input values,
// and the store's unmined transactions.
type feeSource struct {
	reads Reads

	mu   sync.Mutex
	seen map[chainhash.Hash]feerate.Tx // the unmined transactions seen last
	// last is the list read at changes, the store's count of writes, when
	// the reads count them (the daemon's do): it is read again once the
	// store has changed.
	last    []feerate.Tx
	changes uint64
	counted bool
}

// changeCounter is what reads that count the store's writes have.
type changeCounter interface{ Changes() uint64 }

func newFeeSource(reads Reads) *feeSource {
	return &feeSource{reads: reads, seen: map[chainhash.Hash]feerate.Tx{}}
}

func (s *feeSource) TipHeight(ctx context.Context) (uint32, bool, error) {
	tip, ok, err := s.reads.Tip(ctx)
	return tip.Height, ok, err
}

// BlockHash is the hash of the block the index holds at height, which
// the estimator compares with the block whose rate it kept.
func (s *feeSource) BlockHash(_ context.Context, height uint32) (chainhash.Hash, bool, error) {
	idx := s.reads.AddressIndex()
	if idx == nil || s.reads.BlockStore() == nil {
		return chainhash.Hash{}, false, nil
	}
	bi, ok, err := idx.BlockInfo(height)
	return bi.Hash, ok, err
}

// BlockTxs reads the block from the block store and each transaction's
// input values from the index; without them the block is not held.
func (s *feeSource) BlockTxs(ctx context.Context, height uint32) (chainhash.Hash, []feerate.Tx, bool, error) {
	idx, blocks := s.reads.AddressIndex(), s.reads.BlockStore()
	if idx == nil || blocks == nil {
		return chainhash.Hash{}, nil, false, nil
	}
	raw, hash, ok, err := blocks.Block(height)
	if err != nil || !ok {
		return hash, nil, false, err
	}
	mb, err := parseBlock(raw, height)
	if err != nil {
		return hash, nil, false, err
	}
	txs := make([]feerate.Tx, 0, len(mb.Txs))
	for _, tx := range mb.Txs[min(1, len(mb.Txs)):] {
		if err := ctx.Err(); err != nil {
			return hash, nil, false, err
		}
		ta, ok, err := idx.TxAddresses(tx.ID)
		if err != nil {
			return hash, nil, false, err
		}
		if !ok {
			return hash, nil, false, nil // not indexed yet
		}
		var in uint64
		for _, i := range ta.Inputs {
			in += i.Value
		}
		if tx, ok := feerate.Of(tx.Msg, in); ok { // else an input the index did not hold: fee unknown
			txs = append(txs, tx)
		}
	}
	return hash, txs, true, nil
}

// Mempool lists the store's unmined transactions with their fees and
// virtual sizes, each read once, when it is first seen.
func (s *feeSource) Mempool(ctx context.Context) ([]feerate.Tx, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	counter, counts := s.reads.(changeCounter)
	var changes uint64
	if counts {
		changes = counter.Changes()
		if s.counted && changes == s.changes {
			return s.last, nil
		}
	}
	mempool, err := utxo.Mempool(ctx, s.reads)
	if err != nil {
		return nil, err
	}
	seen := make(map[chainhash.Hash]feerate.Tx, len(s.seen))
	var txs []feerate.Tx
	for _, u := range mempool {
		tx, ok := s.seen[u.TxID]
		if !ok {
			meta, err := s.reads.Get(ctx, u.TxID, utxo.FieldTx)
			if errors.Is(err, model.ErrTxNotFound) {
				continue // mined or removed since the iterator listed it
			}
			if err != nil {
				return nil, err
			}
			if meta.Tx == nil || meta.Tx.Msg == nil {
				continue
			}
			if tx, ok = s.feeOf(ctx, meta.Tx); !ok {
				tx = feerate.Tx{Fee: u.Fee, VSize: feerate.VSize(meta.Tx.Msg)}
			}
		}
		seen[u.TxID] = tx
		txs = append(txs, tx)
	}
	s.seen = seen
	s.last, s.changes, s.counted = txs, changes, counts
	return txs, nil
}

// feeOf is the transaction's fee and size from its parents' outputs; ok
// is false when the store no longer holds a parent.
func (s *feeSource) feeOf(ctx context.Context, tx *chain.Tx) (feerate.Tx, bool) {
	prevs, err := s.reads.PreviousOutputsDecorate(ctx, tx)
	if err != nil || len(prevs) != len(tx.Msg.TxIn) {
		return feerate.Tx{}, false
	}
	var in uint64
	for _, p := range prevs {
		if p == nil {
			return feerate.Tx{}, false
		}
		in += uint64(p.Value)
	}
	return feerate.Of(tx.Msg, in)
}

// handleEstimateFee answers Blockbook's estimatefee/N from the store's
// own data: the rate in BTC per kB, as Blockbook prints bitcoind's.
func (a *API) handleEstimateFee(w http.ResponseWriter, r *http.Request) {
	blocks, err := strconv.Atoi(r.PathValue("blocks"))
	if err != nil {
		httpreply.Error(w, http.StatusBadRequest, "Parameter 'number of blocks' is not a number")
		return
	}
	rate, err := a.fees.Estimate(r.Context(), blocks)
	if err != nil {
		httpreply.Error(w, outcomeCode(http.StatusInternalServerError, err), "estimating the fee: %v", err)
		return
	}
	httpreply.JSON(w, http.StatusOK, map[string]string{"result": rate.BTCPerKB()})
}

// wsEstimateFee is the websocket's estimateFee: per target, the rate in
// satoshis per kB (feePerUnit), and with the "txsize" of the specific
// parameters the fee of a transaction that size (feePerTx), as Blockbook
// answers them.
func (a *API) wsEstimateFee(ctx context.Context, blocks []int, specific map[string]any) (any, error) {
	type estimate struct {
		FeePerTx   string `json:"feePerTx,omitempty"`
		FeePerUnit string `json:"feePerUnit,omitempty"`
	}
	txSize := uint64(0)
	if f, ok := specific["txsize"].(float64); ok && f > 0 {
		txSize = uint64(f)
	}
	out := make([]estimate, len(blocks))
	for i, b := range blocks {
		rate, err := a.fees.Estimate(ctx, b)
		if err != nil {
			return nil, err
		}
		out[i].FeePerUnit = strconv.FormatUint(uint64(rate), 10)
		if txSize > 0 {
			out[i].FeePerTx = strconv.FormatUint(uint64(rate)*txSize/1000, 10)
		}
	}
	return out, nil
}
