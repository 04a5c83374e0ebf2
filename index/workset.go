package index

import (
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/cockroachdb/pebble"
)

// workset holds the txAddresses and addressBalance values that connecting
// blocks reads and changes. Everything in it has been (or is about to be)
// changed, so a flush writes all of it. ConnectBlock uses a fresh workset
// per block; a bulk import keeps one across many blocks, which is where
// its speed comes from: a busy address is read and written once per flush
// instead of once per block.
type workset struct {
	ix  *Index
	txa map[chainhash.Hash]*txAddresses
	bal map[string]*addrBalance
}

func newWorkset(ix *Index) *workset {
	return &workset{ix: ix, txa: make(map[chainhash.Hash]*txAddresses), bal: make(map[string]*addrBalance)}
}

// txAddresses returns the stored value for txid, or nil if it is unknown.
func (w *workset) txAddresses(txid *chainhash.Hash) (*txAddresses, error) {
	if ta, ok := w.txa[*txid]; ok {
		return ta, nil
	}
	key := packedHash(txid)
	val, err := w.ix.get(cfTxAddresses, key)
	if err != nil || val == nil {
		return nil, err
	}
	ta, err := unpackTxAddresses(key, val)
	if err != nil {
		return nil, err
	}
	w.txa[*txid] = ta
	return ta, nil
}

// balance returns the value for addrDesc, creating an empty one.
func (w *workset) balance(addrDesc []byte) (*addrBalance, error) {
	if ab, ok := w.bal[string(addrDesc)]; ok {
		return ab, nil
	}
	ab, err := w.ix.loadBalance(addrDesc)
	if err != nil {
		return nil, err
	}
	if ab == nil {
		ab = &addrBalance{}
	}
	w.bal[string(addrDesc)] = ab
	return ab, nil
}

// flush writes every held value into wb and forgets them. An address
// left with no transactions is deleted, as Blockbook does on disconnect.
func (w *workset) flush(wb *pebble.Batch) error {
	for txid, ta := range w.txa {
		if err := wb.Set(cfTxAddresses.key(packedHash(&txid)), packTxAddresses(ta), nil); err != nil {
			return err
		}
	}
	for addrDesc, ab := range w.bal {
		key := cfAddressBalance.key([]byte(addrDesc))
		var err error
		if ab.txs == 0 {
			err = wb.Delete(key, nil)
		} else {
			ab.compact()
			err = wb.Set(key, packAddrBalance(ab), nil)
		}
		if err != nil {
			return err
		}
	}
	clear(w.txa)
	clear(w.bal)
	return nil
}

func (ix *Index) loadBalance(addrDesc []byte) (*addrBalance, error) {
	val, err := ix.get(cfAddressBalance, addrDesc)
	if err != nil || val == nil {
		return nil, err
	}
	return unpackAddrBalance(addrDesc, val)
}
