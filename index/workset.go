package index

import (
	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// workset holds the txAddresses and addressBalance values that connecting
// blocks reads and changes. Everything in it has been (or is about to be)
// changed, so a flush writes all of it. ConnectBlock uses a fresh workset
// per block; a bulk import keeps one across many blocks, which is where
// its speed comes from: a busy address is read and written once per flush
// instead of once per block.
//
// A bulk import also keeps values across flushes (up to maxCached of each
// kind), so only the values changed since the last flush are written and
// a value read again is not read from the database. A transaction's value
// is kept as the bytes the flush wrote (keptTxa), a single allocation
// with no pointers: as a txAddresses it would be a struct, a slice of its
// outputs, and the block's transaction bytes its addresses point into,
// about three times the memory for the garbage collector to mark.
type workset struct {
	ix *Index
	// txa holds the transactions' values read or changed since the last
	// flush, keptTxa those kept from before it.
	txa     map[chainhash.Hash]*txAddresses
	keptTxa map[chainhash.Hash][]byte
	bal     map[string]*addrBalance
	// changedTxa and changedBal list the values changed since the last
	// flush, each once (its changed flag is set), with their keys: a flush
	// writes them without looking them up again.
	changedTxa []changedTx
	changedBal []changedBalance
	// keep is how many values of each kind a flush leaves in memory
	// (maxCached; tests lower it).
	keep int
	// allTxa and allBal say that the workset holds every value of its
	// kind the database holds, so a value it lacks does not exist and is
	// not looked for: a bulk import into an index that held none (an
	// initial import) until a flush first forgets values of that kind.
	allTxa, allBal bool
	// created, in a bulk import, holds every address with a balance: the
	// database's when the import began (Index.fillAddressFilter) and those
	// the import gave one. One it does not hold has none, in the workset
	// or the database. It is nil elsewhere, and once full.
	created *addressFilter
	// p2pk holds the unspent outputs connected through this workset that
	// pay a pay-to-pubkey script, whose mark (the p2pk column) an input
	// that spends one copies: Blockbook's txAddresses value, kept or read
	// back, does not say it. allP2PK says that p2pk holds every such
	// output the index has, so one it lacks pays none and the column is
	// not looked in: a bulk import into an index whose p2pk column was
	// empty when it began (an initial import), or whose marked outputs it
	// loaded (Index.loadP2PKOutputs), spent ones included.
	p2pk    map[outpointKey]struct{}
	allP2PK bool
	// reads counts the values looked for in the database.
	reads lookups
}

// lookups counts a workset's reads of the database, by column.
type lookups struct{ txAddresses, balances, marks int }

type changedTx struct {
	txid chainhash.Hash
	ta   *txAddresses
}

type changedBalance struct {
	addrDesc string
	ab       *addrBalance
}

// maxCached bounds what a bulk import keeps between flushes; above it a
// flush forgets values, any of them, until maxCached remain.
const maxCached = 1 << 20

func newWorkset(ix *Index) *workset {
	return &workset{ix: ix,
		txa: make(map[chainhash.Hash]*txAddresses), keptTxa: make(map[chainhash.Hash][]byte), bal: make(map[string]*addrBalance),
		p2pk: make(map[outpointKey]struct{}), keep: maxCached,
	}
}

// paysP2PK records that output vout of txid, just connected, pays a
// pay-to-pubkey script.
func (w *workset) paysP2PK(txid *chainhash.Hash, vout int) {
	w.p2pk[outpointKey{*txid, int32(vout)}] = struct{}{}
}

// spendsP2PK reports whether output vout of txid, which an input is
// spending, pays a pay-to-pubkey script, reading the p2pk column when
// the workset cannot tell, and forgets the output.
func (w *workset) spendsP2PK(txid *chainhash.Hash, vout uint32) (bool, error) {
	key := outpointKey{*txid, int32(vout)}
	if _, ok := w.p2pk[key]; ok {
		delete(w.p2pk, key)
		return true, nil
	}
	if w.allP2PK {
		return false, nil
	}
	w.reads.marks++
	return w.ix.p2pkMark(txid, vout, false)
}

// putTxAddresses adds the value of a newly connected transaction.
func (w *workset) putTxAddresses(txid *chainhash.Hash, ta *txAddresses) {
	w.txa[*txid] = ta
	w.changeTx(txid, ta)
}

func (w *workset) changeTx(txid *chainhash.Hash, ta *txAddresses) {
	if !ta.changed {
		ta.changed = true
		w.changedTxa = append(w.changedTxa, changedTx{txid: *txid, ta: ta})
	}
}

func (w *workset) changeBalance(addrDesc string, ab *addrBalance) {
	if !ab.changed {
		ab.changed = true
		w.changedBal = append(w.changedBal, changedBalance{addrDesc: addrDesc, ab: ab})
	}
}

// txAddresses returns the value for txid, to be changed, or nil if txid
// is unknown.
func (w *workset) txAddresses(txid *chainhash.Hash) (*txAddresses, error) {
	if ta, ok := w.txa[*txid]; ok {
		w.changeTx(txid, ta)
		return ta, nil
	}
	key := packedHash(txid)
	val, kept := w.keptTxa[*txid]
	if kept {
		delete(w.keptTxa, *txid)
	} else {
		if w.allTxa {
			return nil, nil
		}
		w.reads.txAddresses++
		var err error
		if val, err = w.ix.get(cfTxAddresses, key); err != nil || val == nil {
			return nil, err
		}
	}
	ta, err := unpackTxAddresses(key, val)
	if err != nil {
		return nil, err
	}
	w.putTxAddresses(txid, ta)
	return ta, nil
}

// balance returns the value for addrDesc, to be changed, creating an
// empty one.
func (w *workset) balance(addrDesc []byte) (*addrBalance, error) {
	ab, err := w.existingBalance(addrDesc)
	if err != nil || ab != nil {
		return ab, err
	}
	ab = &addrBalance{}
	if w.created != nil && !w.created.add(addrDesc) {
		w.created = nil
		if err := w.ix.addressesPastFilter(); err != nil {
			return nil, err
		}
	}
	key := string(addrDesc)
	w.bal[key] = ab
	w.changeBalance(key, ab)
	return ab, nil
}

// existingBalance returns the value for addrDesc, to be changed, or nil
// if the address has none.
func (w *workset) existingBalance(addrDesc []byte) (*addrBalance, error) {
	if ab, ok := w.bal[string(addrDesc)]; ok {
		if !ab.changed {
			w.changeBalance(string(addrDesc), ab)
		}
		return ab, nil
	}
	if w.allBal || (w.created != nil && !w.created.mayHold(addrDesc)) {
		return nil, nil
	}
	w.reads.balances++
	ab, err := w.ix.loadBalance(addrDesc)
	if err != nil || ab == nil {
		return nil, err
	}
	key := string(addrDesc)
	w.bal[key] = ab
	w.changeBalance(key, ab)
	return ab, nil
}

// dropTxAddresses forgets the value of a disconnected transaction, whose
// entry the disconnection deletes.
func (w *workset) dropTxAddresses(txid *chainhash.Hash) {
	if ta, ok := w.txa[*txid]; ok {
		ta.changed = false // not to be written
		delete(w.txa, *txid)
	}
	delete(w.keptTxa, *txid)
}

// flush writes every changed value into wb. An address left with no
// transactions is deleted, as Blockbook does on disconnect.
func (w *workset) flush(wb writes) error {
	for _, c := range w.changedTxa {
		if !c.ta.changed {
			continue // dropped
		}
		c.ta.changed = false
		packed := packTxAddresses(c.ta)
		if err := wb.Set(cfTxAddresses.key(packedHash(&c.txid)), packed, nil); err != nil {
			return err
		}
		w.keptTxa[c.txid] = packed
	}
	for _, c := range w.changedBal {
		ab := c.ab
		ab.changed = false
		key := cfAddressBalance.key([]byte(c.addrDesc))
		var err error
		if ab.txs == 0 {
			err = wb.Delete(key, nil)
			delete(w.bal, c.addrDesc)
		} else {
			ab.compact()
			err = wb.Set(key, packAddrBalance(ab), nil)
		}
		if err != nil {
			return err
		}
	}
	w.changedTxa, w.changedBal = nil, nil
	// Every value in txa was changed (reading one changes it), so it is
	// written and kept now.
	clear(w.txa)
	if forgetBeyond(w.keptTxa, w.keep) {
		w.allTxa = false
	}
	if forgetBeyond(w.bal, w.keep) {
		w.allBal = false
	}
	return nil
}

// forgetBeyond drops values of m, all written, until at most n remain.
// Which go is the map's order: that costs nothing to choose, and a value
// forgotten is only read again. Dropping the excess rather than the whole
// map spares the rest that read. It reports whether it dropped any.
func forgetBeyond[K comparable, V any](m map[K]V, n int) bool {
	if len(m) <= n {
		return false
	}
	for k := range m {
		if len(m) <= n {
			break
		}
		delete(m, k)
	}
	return true
}

func (ix *Index) loadBalance(addrDesc []byte) (*addrBalance, error) {
	val, err := ix.get(cfAddressBalance, addrDesc)
	if err != nil || val == nil {
		return nil, err
	}
	return unpackAddrBalance(addrDesc, val)
}
