package index

import "github.com/btcsuite/btcd/chaincfg/chainhash"

// txIndexes is one transaction of an addresses value: where in that
// transaction the address occurs. An index >= 0 is an output (vout); an
// index < 0 is the input ^index.
type txIndexes struct {
	txid    chainhash.Hash
	indexes []int32
}

// packTxIndexes stores the transactions in reverse order of appearance,
// as Blockbook does, so that a reader sees the newest first. Each index is
// shifted left by one; the lowest bit marks the last index of a transaction.
func packTxIndexes(txs []txIndexes) []byte {
	b := make([]byte, 0, len(txs)*(chainhash.HashSize+2))
	for j := len(txs) - 1; j >= 0; j-- {
		t := &txs[j]
		b = appendHash(b, &t.txid)
		for i, idx := range t.indexes {
			v := int64(idx) << 1
			if i == len(t.indexes)-1 {
				v |= 1
			}
			b = appendVarint(b, v)
		}
	}
	return b
}

// unpackTxIndexes returns the transactions in stored order (newest first).
func unpackTxIndexes(key, val []byte) ([]txIndexes, error) {
	if len(key) < 4 {
		return nil, corrupt(cfAddresses, key, "key of %d bytes is shorter than a height", len(key))
	}
	d := decoder{buf: val}
	var txs []txIndexes
	for !d.empty() {
		t := txIndexes{txid: d.hash()}
		for d.err == nil {
			if d.empty() {
				d.fail("index list of tx %s has no last element", t.txid)
				break
			}
			v := d.varint()
			idx := v >> 1
			if idx != int64(int32(idx)) {
				d.fail("index %d exceeds 32 bits", idx)
				break
			}
			t.indexes = append(t.indexes, int32(idx))
			if v&1 == 1 {
				break
			}
		}
		txs = append(txs, t)
	}
	return txs, d.done(cfAddresses, key)
}
