package index

import "github.com/btcsuite/btcd/chaincfg/chainhash"

// utxo is one unspent output in an addressBalance value. vout < 0 marks an
// entry spent in memory; packing drops it (Blockbook's trick to avoid
// shifting the slice on every spend).
type utxo struct {
	txid   chainhash.Hash
	vout   int32
	height uint32
	value  uint64
}

type outpointKey struct {
	txid chainhash.Hash
	vout int32
}

// addrBalance is one value of the addressBalance column.
type addrBalance struct {
	txs     uint32
	sent    uint64
	balance uint64
	utxos   []utxo // oldest first

	// byOutpoint indexes utxos once an address has many, so spends are not
	// quadratic for busy addresses during bulk import. Built lazily.
	byOutpoint map[outpointKey]int
	// changed, never stored, marks a value a workset is to write.
	changed bool
}

// indexThreshold is the utxo count from which spends use byOutpoint.
const indexThreshold = 16

func (ab *addrBalance) addUtxo(u utxo) {
	ab.utxos = append(ab.utxos, u)
	if ab.byOutpoint != nil {
		ab.byOutpoint[outpointKey{u.txid, u.vout}] = len(ab.utxos) - 1
	}
}

// spendUtxo marks the utxo spent and reports whether it was there.
func (ab *addrBalance) spendUtxo(txid *chainhash.Hash, vout int32) bool {
	k := outpointKey{*txid, vout}
	if len(ab.utxos) >= indexThreshold {
		if ab.byOutpoint == nil {
			ab.byOutpoint = make(map[outpointKey]int, len(ab.utxos))
			for i := range ab.utxos {
				if u := &ab.utxos[i]; u.vout >= 0 {
					ab.byOutpoint[outpointKey{u.txid, u.vout}] = i
				}
			}
		}
		i, ok := ab.byOutpoint[k]
		if !ok {
			return false
		}
		delete(ab.byOutpoint, k)
		ab.utxos[i].vout = -1
		return true
	}
	for i := range ab.utxos {
		if u := &ab.utxos[i]; u.vout == vout && u.txid == *txid {
			u.vout = -1
			return true
		}
	}
	return false
}

// compact drops spent entries; positions change, so the map goes.
func (ab *addrBalance) compact() {
	n := 0
	for _, u := range ab.utxos {
		if u.vout >= 0 {
			ab.utxos[n] = u
			n++
		}
	}
	if n != len(ab.utxos) {
		ab.utxos = ab.utxos[:n]
		ab.byOutpoint = nil
	}
}

func packAddrBalance(ab *addrBalance) []byte {
	b := make([]byte, 0, 3+2*9+len(ab.utxos)*(chainhash.HashSize+12))
	b = appendUvarint(b, uint64(ab.txs))
	b = appendAmount(b, ab.sent)
	b = appendAmount(b, ab.balance)
	for i := range ab.utxos {
		u := &ab.utxos[i]
		if u.vout < 0 {
			continue
		}
		b = appendHash(b, &u.txid)
		b = appendUvarint(b, uint64(u.vout))
		b = appendUvarint(b, uint64(u.height))
		b = appendAmount(b, u.value)
	}
	return b
}

func unpackAddrBalance(key, val []byte) (*addrBalance, error) {
	d := decoder{buf: val}
	ab := &addrBalance{txs: d.uint32v("nr_txs"), sent: d.amount(), balance: d.amount()}
	for !d.empty() {
		u := utxo{txid: d.hash()}
		vout := d.uint32v("vout")
		if vout > 1<<31-1 {
			d.fail("vout %d exceeds 31 bits", vout)
		}
		u.vout = int32(vout)
		u.height = d.uint32v("height")
		u.value = d.amount()
		ab.utxos = append(ab.utxos, u)
	}
	if err := d.done(cfAddressBalance, key); err != nil {
		return nil, err
	}
	return ab, nil
}
