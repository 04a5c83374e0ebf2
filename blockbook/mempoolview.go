package blockbook

import (
	"context"
	"sync"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/utxo"
)

// mempoolView is the store's unmined transactions as they touch each
// address, as listed at one moment: what an address's page, its unspent
// outputs and an xpub's addresses take their unconfirmed part from.
type mempoolView struct {
	// ids are the transactions, oldest first (utxo.Mempool's order), and
	// createdAt when the store took each (Unix milliseconds).
	ids       []chainhash.Hash
	createdAt []int64
	// touched are the transactions read, each with what it does to each
	// address it pays to or spends from.
	touched map[chainhash.Hash]map[string]pendingTx
	// byAddr are the transactions touching each address, oldest first.
	byAddr map[string][]pendingTx
}

// mempoolCache holds the last view; it is built again when the store has
// changed since, reading only the transactions the last one lacked.
type mempoolCache struct {
	mu      sync.Mutex
	changes uint64
	view    *mempoolView
	// read are the transactions read so far, kept through a build that
	// failed part way so the next one goes on from there.
	read map[chainhash.Hash]map[string]pendingTx
}

// mempool is the current view of the store's unmined transactions. A
// store holds no address index of them, so each is read once, when it
// first shows up: a request no longer reads the whole mempool for every
// address it asks about.
func (a *API) mempool(ctx context.Context) (*mempoolView, error) {
	c := &a.pool
	c.mu.Lock()
	defer c.mu.Unlock()
	changes := a.reads.Changes()
	if c.view != nil && changes == c.changes {
		return c.view, nil
	}
	list, err := utxo.Mempool(ctx, a.reads)
	if err != nil {
		return nil, err
	}
	if c.read == nil {
		c.read = map[chainhash.Hash]map[string]pendingTx{}
	}
	v := &mempoolView{touched: make(map[chainhash.Hash]map[string]pendingTx, len(list)), byAddr: map[string][]pendingTx{}}
	for _, u := range list {
		t, ok := c.read[u.TxID]
		if !ok {
			if t, ok, err = a.readPending(ctx, u.TxID); err != nil {
				return nil, err
			}
			if !ok {
				continue // mined or deleted since the listing
			}
			c.read[u.TxID] = t
		}
		v.ids, v.createdAt = append(v.ids, u.TxID), append(v.createdAt, u.CreatedAt)
		v.touched[u.TxID] = t
	}
	for _, id := range v.ids {
		for desc, p := range v.touched[id] {
			v.byAddr[desc] = append(v.byAddr[desc], p)
		}
	}
	c.read = v.touched // what left the mempool is forgotten
	c.view, c.changes = v, changes
	return v, nil
}

// readPending reads an unmined transaction and what it does to each
// address it touches; false when the store no longer holds it.
func (a *API) readPending(ctx context.Context, txid chainhash.Hash) (map[string]pendingTx, bool, error) {
	meta, err := a.reads.Get(ctx, txid, utxo.FieldTx)
	if err != nil || meta.Tx == nil {
		return nil, false, nil
	}
	tx := meta.Tx.Msg
	prevs, err := a.prevOutputs(ctx, tx)
	if err != nil {
		return nil, false, err
	}
	touched := map[string]pendingTx{}
	at := func(desc []byte) pendingTx {
		p, ok := touched[string(desc)]
		if !ok {
			p = pendingTx{txid: txid, lockTime: tx.LockTime}
		}
		return p
	}
	for i, o := range tx.TxOut {
		desc := index.AddrDesc(o.PkScript)
		p := at(desc)
		p.outputs = append(p.outputs, pendingOutput{vout: uint32(i), value: uint64(o.Value)})
		p.delta += o.Value
		touched[string(desc)] = p
	}
	for i, prev := range prevs {
		if prev == nil {
			continue
		}
		p := at(prev.addrDesc)
		p.spends = append(p.spends, tx.TxIn[i].PreviousOutPoint)
		p.delta -= int64(prev.value)
		touched[string(prev.addrDesc)] = p
	}
	return touched, true, nil
}
