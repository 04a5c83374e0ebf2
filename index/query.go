package index

import "github.com/btcsuite/btcd/chaincfg/chainhash"

// blockInfo reads the height column; nil when absent.
func (ix *Index) blockInfo(height uint32) (*BlockInfo, error) {
	key := packUint32(height)
	val, err := ix.get(cfHeight, key)
	if err != nil || val == nil {
		return nil, err
	}
	bi, err := unpackBlockInfo(key, val)
	if err != nil {
		return nil, err
	}
	return &bi, nil
}

// BlockInfo returns the height column entry; ok is false when absent.
func (ix *Index) BlockInfo(height uint32) (bi BlockInfo, ok bool, err error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.db == nil {
		return BlockInfo{}, false, ErrClosed
	}
	p, err := ix.blockInfo(height)
	if err != nil || p == nil {
		return BlockInfo{}, false, err
	}
	return *p, true, nil
}

// BestBlock returns the tip; ok is false for an empty index.
func (ix *Index) BestBlock() (bi BlockInfo, ok bool, err error) {
	ix.mu.RLock()
	hasTip, tip := ix.hasTip, ix.tip
	ix.mu.RUnlock()
	if !hasTip {
		return BlockInfo{}, false, nil
	}
	return ix.BlockInfo(tip)
}

// TxOutputRef is one input or output of a transaction as txAddresses
// records it.
type TxOutputRef struct {
	AddrDesc []byte // empty for coinbase inputs and unindexed outputs
	Value    uint64
	Spent    bool // outputs only
}

// TxAddresses is the txAddresses entry of one transaction.
type TxAddresses struct {
	Height  uint32
	Inputs  []TxOutputRef
	Outputs []TxOutputRef
}

// TxAddresses returns what the index knows about txid; ok is false when
// the transaction is not indexed.
func (ix *Index) TxAddresses(txid chainhash.Hash) (ta TxAddresses, ok bool, err error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.db == nil {
		return TxAddresses{}, false, ErrClosed
	}
	key := packedHash(&txid)
	val, err := ix.get(cfTxAddresses, key)
	if err != nil || val == nil {
		return TxAddresses{}, false, err
	}
	t, err := unpackTxAddresses(key, val)
	if err != nil {
		return TxAddresses{}, false, err
	}
	ta.Height = t.height
	for _, in := range t.inputs {
		ta.Inputs = append(ta.Inputs, TxOutputRef{AddrDesc: in.addrDesc, Value: in.value})
	}
	for _, out := range t.outputs {
		ta.Outputs = append(ta.Outputs, TxOutputRef{AddrDesc: out.addrDesc, Value: out.value, Spent: out.spent})
	}
	return ta, true, nil
}
