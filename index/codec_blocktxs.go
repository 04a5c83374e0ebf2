package index

import "github.com/btcsuite/btcd/chaincfg/chainhash"

// blockTx is one transaction of a blockTxs value: its id and the outpoints
// its inputs spend, which is what a rollback needs to find the spent
// outputs again.
type blockTx struct {
	txid   chainhash.Hash
	inputs []prevOut
}

// prevOut is a spent outpoint; a coinbase input is the zero hash and 0.
type prevOut struct {
	txid chainhash.Hash
	vout int32
}

func packBlockTxs(txs []blockTx) []byte {
	n := 0
	for i := range txs {
		n += chainhash.HashSize + 1 + len(txs[i].inputs)*(chainhash.HashSize+2)
	}
	b := make([]byte, 0, n)
	for i := range txs {
		t := &txs[i]
		b = appendHash(b, &t.txid)
		b = appendUvarint(b, uint64(len(t.inputs)))
		for j := range t.inputs {
			b = appendHash(b, &t.inputs[j].txid)
			b = appendVarint(b, int64(t.inputs[j].vout))
		}
	}
	return b
}

func unpackBlockTxs(key, val []byte) ([]blockTx, error) {
	d := decoder{buf: val}
	var txs []blockTx
	for !d.empty() {
		t := blockTx{txid: d.hash()}
		t.inputs = make([]prevOut, d.count("nr_inputs", chainhash.HashSize+1))
		for j := range t.inputs {
			t.inputs[j].txid = d.hash()
			t.inputs[j].vout = d.int32v("vout")
		}
		txs = append(txs, t)
	}
	return txs, d.done(cfBlockTxs, key)
}
