package workload

import (
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/bench/internal/arena"
	"github.com/utxostore/utxostore/internal/agerank"
)

// liveOut is one output waiting to become spendable: an immature coinbase.
type liveOut struct {
	op         wire.OutPoint
	value      int64
	height     uint32 // the height of the block that created it
	scriptSeed uint64 // its script's (p2pkh)
}

// txMeta is what the set statistics need of a transaction whose outputs
// the live set holds, beside each output's value: its outputs' script seed
// (p2pkh), its height and whether it is a coinbase.
type txMeta struct {
	scriptSeed uint64
	height     uint32
	coinbase   bool
}

// spendable is one entry of the live set: 16 bytes, its transaction named
// by index, so that the set of a 50-million-UTXO chain fits in a few
// hundred megabytes.
type spendable struct {
	tx, vout uint32
	value    int64
}

// liveSet keeps the spendable outputs in the order they became spendable
// (creation, or maturity for coinbases), so that "the output of age rank r"
// (r-th newest) can be found in O(log n): the spend-age distribution is
// defined over that order. Entries are never removed, only marked spent in
// ages, so an entry's index is its slot there.
type liveSet struct {
	txids   arena.Arena[chainhash.Hash] // the transactions entries name
	txMetas arena.Arena[txMeta]         // beside txids
	entries arena.Arena[spendable]      // slot i is entries[i]
	ages    agerank.Set
}

// addTx names a transaction whose outputs add will add.
func (s *liveSet) addTx(id chainhash.Hash, meta txMeta) uint32 {
	s.txMetas.Add(meta)
	return s.txids.Add(id)
}

// add appends output vout of the transaction addTx numbered tx.
func (s *liveSet) add(tx, vout uint32, value int64) {
	s.entries.Add(spendable{tx: tx, vout: vout, value: value})
	s.ages.Add()
}

// outpoint names entry idx.
func (s *liveSet) outpoint(idx int) wire.OutPoint {
	e := s.entries.At(uint32(idx))
	return wire.OutPoint{Hash: *s.txids.At(e.tx), Index: e.vout}
}

// remove marks entry idx spent and returns its outpoint, value and
// transaction.
func (s *liveSet) remove(idx int) (wire.OutPoint, int64, txMeta) {
	s.ages.Remove(idx)
	e := s.entries.At(uint32(idx))
	return s.outpoint(idx), e.value, *s.txMetas.At(e.tx)
}

// len is the number of entries ever added: the next entry's index.
func (s *liveSet) len() int { return int(s.entries.Len()) }

func (s *liveSet) alive() int { return s.ages.Alive() }

// kth returns the index of the k-th live entry, oldest first, k from 1.
func (s *liveSet) kth(k int) int { return s.ages.Kth(k) }

// newest returns the index of the live entry of age rank r (0: the newest).
func (s *liveSet) newest(r int) int { return s.ages.Newest(r) }
