package electrum

import (
	"context"
	"errors"
	"sync"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/feerate"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// mempoolTx is what the protocol needs of one unmined transaction.
type mempoolTx struct {
	txid   chainhash.Hash
	fee    uint64
	vsize  uint64
	outs   []mempoolOut
	spends []mempoolSpend
}

type mempoolOut struct {
	sh    index.ScriptHash
	vout  uint32
	value uint64
}

// mempoolSpend is an output the transaction spends; sh is unknown (zero,
// known false) when the store no longer holds the parent.
type mempoolSpend struct {
	op    wire.OutPoint
	sh    index.ScriptHash
	known bool
	value uint64
}

// touches are the script hashes the transaction pays or spends from.
func (t *mempoolTx) touches() []index.ScriptHash {
	var out []index.ScriptHash
	for _, o := range t.outs {
		out = append(out, o.sh)
	}
	for _, sp := range t.spends {
		if sp.known {
			out = append(out, sp.sh)
		}
	}
	return out
}

// mempoolView is the store's unmined transactions as read at one moment.
// A transaction read once is shared by the views after it, which requests
// may still be reading: nothing of it changes once read, and what depends
// on the other transactions (an unmined parent) is the view's to say.
type mempoolView struct {
	txs      map[chainhash.Hash]*mempoolTx
	byScript map[index.ScriptHash][]*mempoolTx
	spent    map[wire.OutPoint]bool // outputs an unmined transaction spends

	// histogram is the view's fee histogram, made at the first request
	// for it: making it sorts the whole mempool, which a client asking
	// again and again must not make the server do each time.
	histogramOnce sync.Once
	histogram     [][2]float64
}

// unconfirmedParent says whether t spends an output of another unmined
// transaction of v (its history height is then -1, else 0).
func (v *mempoolView) unconfirmedParent(t *mempoolTx) bool {
	for _, sp := range t.spends {
		if v.txs[sp.op.Hash] != nil {
			return true
		}
	}
	return false
}

// mempoolCache holds the last view; it is read again when the store has
// changed since.
type mempoolCache struct {
	mu      sync.Mutex
	changes uint64
	view    *mempoolView
	// read are the transactions read for a view not yet built, whose
	// read failed or ran out of time: the next read takes them, so a
	// mempool that grew by more than one request can read still gets
	// read, a request at a time.
	read map[chainhash.Hash]*mempoolTx
}

// mempool is the current view of the unmined transactions: each one read
// once, when it first shows up.
func (s *Server) mempool(ctx context.Context) (*mempoolView, error) {
	c := &s.pool
	c.mu.Lock()
	defer c.mu.Unlock()
	changes := s.reads.Changes()
	if c.view != nil && changes == c.changes {
		return c.view, nil
	}
	old := c.view
	if old == nil {
		old = &mempoolView{}
	}
	mempool, err := utxo.Mempool(ctx, s.reads)
	if err != nil {
		return nil, err
	}
	v := &mempoolView{txs: map[chainhash.Hash]*mempoolTx{}, byScript: map[index.ScriptHash][]*mempoolTx{}, spent: map[wire.OutPoint]bool{}}
	for _, u := range mempool {
		t := old.txs[u.TxID]
		if t == nil {
			t = c.read[u.TxID]
		}
		if t == nil {
			if t, err = s.readMempoolTx(ctx, u); err != nil {
				c.read = v.txs
				return nil, err
			}
			if t == nil {
				continue
			}
		}
		v.txs[u.TxID] = t
	}
	c.read = nil
	for _, t := range v.txs {
		for _, sp := range t.spends {
			v.spent[sp.op] = true
		}
		seen := map[index.ScriptHash]bool{}
		for _, sh := range t.touches() {
			if !seen[sh] {
				seen[sh] = true
				v.byScript[sh] = append(v.byScript[sh], t)
			}
		}
	}
	c.view, c.changes = v, changes
	return v, nil
}

// readMempoolTx reads one unmined transaction and the outputs it spends;
// nil when it is gone or conflicting.
func (s *Server) readMempoolTx(ctx context.Context, u *utxo.UnminedTransaction) (*mempoolTx, error) {
	meta, err := s.reads.Get(ctx, u.TxID, utxo.FieldTx)
	if errors.Is(err, model.ErrTxNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if meta.Conflicting || meta.Tx == nil || meta.Tx.Msg == nil {
		return nil, nil
	}
	msg := meta.Tx.Msg
	t := &mempoolTx{txid: u.TxID, fee: u.Fee, vsize: feerate.VSize(msg)}
	for i, o := range msg.TxOut {
		t.outs = append(t.outs, mempoolOut{sh: index.HashScript(o.PkScript), vout: uint32(i), value: uint64(o.Value)})
	}
	prevs, err := s.reads.PreviousOutputsDecorate(ctx, meta.Tx)
	if err != nil {
		prevs = nil // a parent the store no longer holds: its script is unknown
	}
	var in uint64
	known := len(prevs) == len(msg.TxIn)
	for i, txIn := range msg.TxIn {
		sp := mempoolSpend{op: txIn.PreviousOutPoint}
		if i < len(prevs) && prevs[i] != nil {
			sp.sh, sp.known, sp.value = index.HashScript(prevs[i].PkScript), true, uint64(prevs[i].Value)
			in += sp.value
		} else {
			known = false
		}
		t.spends = append(t.spends, sp)
	}
	// The store's own figure stands when a parent is gone.
	if fee, ok := feerate.Of(msg, in); known && ok {
		t.fee = fee.Fee
	}
	return t, nil
}

// feeHistogram is mempool.get_fee_histogram of the current view.
func (s *Server) feeHistogram(ctx context.Context) (any, error) {
	v, err := s.mempool(ctx)
	if err != nil {
		return nil, err
	}
	return v.feeHistogram(), nil
}

// feeHistogram is the view's [rate in sat/vB, vsize] pairs, highest rate
// first (feerate.Histogram), made at the first call and shared by the
// calls after it.
func (v *mempoolView) feeHistogram() [][2]float64 {
	v.histogramOnce.Do(func() {
		txs := make([]feerate.Tx, 0, len(v.txs))
		for _, t := range v.txs {
			txs = append(txs, feerate.Tx{Fee: t.fee, VSize: t.vsize})
		}
		v.histogram = [][2]float64{}
		for _, b := range feerate.Histogram(txs) {
			v.histogram = append(v.histogram, [2]float64{float64(b.Rate) / 1000, float64(b.VSize)})
		}
	})
	return v.histogram
}
