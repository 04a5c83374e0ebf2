package index

import (
	"fmt"
	"sort"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// DisconnectBlock removes the tip block, which must have the given height
// and hash, in one atomic batch. It uses the block's blockTxs entry to
// find the spent outputs and its txAddresses entries to find the amounts,
// and leaves every column as it was before the block was connected.
func (ix *Index) DisconnectBlock(height uint32, hash chainhash.Hash) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := ix.writable(); err != nil {
		return err
	}
	btxs, err := ix.tipBlockTxs(height, hash)
	if err != nil {
		return err
	}
	return ix.unindex(newWorkset(ix), height, btxs)
}

// tipBlockTxs checks that the tip is the block of height and hash and
// returns its blockTxs entry. It changes nothing.
func (ix *Index) tipBlockTxs(height uint32, hash chainhash.Hash) ([]blockTx, error) {
	if !ix.hasTip || height != ix.tip {
		return nil, fmt.Errorf("%w: tip is %d (present: %v), asked for %d", ErrNotTip, ix.tip, ix.hasTip, height)
	}
	bi, err := ix.blockInfo(height)
	if err != nil {
		return nil, err
	}
	if bi == nil || bi.Hash != hash {
		return nil, fmt.Errorf("%w: block %d is not %s", ErrNotTip, height, hash)
	}
	key := packUint32(height)
	val, err := ix.get(cfBlockTxs, key)
	if err != nil {
		return nil, err
	}
	if val == nil {
		return nil, fmt.Errorf("%w: no blockTxs for height %d", ErrRollbackTooDeep, height)
	}
	return unpackBlockTxs(key, val)
}

// unindex removes the tip block at height, whose blockTxs entry is btxs,
// in one atomic batch. It reads and changes the txAddresses and
// addressBalance values through ws, which must hold nothing unwritten,
// and leaves ws holding them as written. If it fails, ws may be
// half-changed.
func (ix *Index) unindex(ws *workset, height uint32, btxs []blockTx) error {
	wb := ix.db.NewBatch()
	defer wb.Close()
	if err := ix.disconnect(ws, wb, height, btxs); err != nil {
		return err
	}
	if err := ws.flush(wb); err != nil {
		return err
	}
	if err := wb.Commit(ix.wo); err != nil {
		return fmt.Errorf("index: disconnect block %d: %w", height, err)
	}
	ix.hasTip = height > 0
	ix.tip = height - 1
	if !ix.hasTip {
		ix.tip = 0
	}
	if ix.win.low == height {
		ix.win = window{} // that was the only entry
	}
	return ix.checkEmptyTip()
}

// checkEmptyTip handles a disconnect that removed the lowest indexed
// block of an index that did not start at genesis.
func (ix *Index) checkEmptyTip() error {
	if !ix.hasTip {
		return nil
	}
	bi, err := ix.blockInfo(ix.tip)
	if err != nil {
		return err
	}
	if bi == nil {
		ix.hasTip, ix.tip = false, 0
	}
	return nil
}

// undo collects the changes of a disconnect in a workset before they are
// written.
type undo struct {
	ix     *Index
	ws     *workset
	height uint32
	inBlk  map[chainhash.Hash]*txAddresses        // the block's own transactions
	pairs  map[string]map[chainhash.Hash]struct{} // address -> txs of this block
}

// balance returns the stored balance of addrDesc, to be changed; the
// block being disconnected was counted in it, so it must exist.
func (u *undo) balance(addrDesc []byte) (*addrBalance, error) {
	ab, err := u.ws.existingBalance(addrDesc)
	if err != nil {
		return nil, err
	}
	if ab == nil {
		return nil, corrupt(cfAddressBalance, addrDesc, "missing while disconnecting block %d", u.height)
	}
	return ab, nil
}

// touch records that addrDesc occurs in txid, once per pair, which is how
// connect counted the address's transactions.
func (u *undo) touch(addrDesc []byte, txid *chainhash.Hash) {
	m := u.pairs[string(addrDesc)]
	if m == nil {
		m = make(map[chainhash.Hash]struct{})
		u.pairs[string(addrDesc)] = m
	}
	m[*txid] = struct{}{}
}

// disconnect applies the undo of the block at height to ws and writes the
// removal of its own entries into wb; ws.flush writes the rest.
func (ix *Index) disconnect(ws *workset, wb writes, height uint32, btxs []blockTx) error {
	u := &undo{ix: ix, ws: ws, height: height,
		inBlk: make(map[chainhash.Hash]*txAddresses, len(btxs)),
		pairs: make(map[string]map[chainhash.Hash]struct{}),
	}
	tas := make([]*txAddresses, len(btxs))
	for i := range btxs {
		ta, err := ws.txAddresses(&btxs[i].txid)
		if err != nil {
			return err
		}
		if ta == nil {
			return corrupt(cfTxAddresses, packedHash(&btxs[i].txid), "missing while disconnecting block %d", height)
		}
		if len(ta.inputs) != len(btxs[i].inputs) {
			return corrupt(cfBlockTxs, packUint32(height), "tx %s has %d inputs, txAddresses has %d", btxs[i].txid, len(btxs[i].inputs), len(ta.inputs))
		}
		tas[i] = ta
		u.inBlk[btxs[i].txid] = ta
	}
	// Inputs first, the reverse of connect: restore what they spent.
	for i := range btxs {
		if err := u.inputs(&btxs[i], tas[i]); err != nil {
			return err
		}
	}
	for i := range btxs {
		if err := u.outputs(&btxs[i], tas[i]); err != nil {
			return err
		}
	}
	return u.write(wb, btxs)
}

func (u *undo) inputs(bt *blockTx, ta *txAddresses) error {
	for i := range ta.inputs {
		in := &ta.inputs[i]
		po := &bt.inputs[i]
		if po.txid == (chainhash.Hash{}) {
			continue // coinbase
		}
		var prevHeight uint32
		_, sameBlock := u.inBlk[po.txid]
		if !sameBlock {
			pta, err := u.prevTx(&po.txid)
			if err != nil {
				return err
			}
			if pta == nil || po.vout < 0 || int(po.vout) >= len(pta.outputs) {
				if len(in.addrDesc) == 0 {
					continue // the spent output was never indexed
				}
				return corrupt(cfTxAddresses, packedHash(&po.txid), "has no output %d, but block %d spends it", po.vout, u.height)
			}
			// Connect marks the output spent even when its script is
			// empty, so undo that even for an empty addrDesc.
			if !pta.outputs[po.vout].spent {
				return corrupt(cfTxAddresses, packedHash(&po.txid), "output %d is not spent, but block %d spends it", po.vout, u.height)
			}
			pta.outputs[po.vout].spent = false
			prevHeight = pta.height
			if err := u.restoreP2PK(bt, i, in.addrDesc); err != nil {
				return err
			}
		}
		if !indexable(in.addrDesc) {
			continue
		}
		ab, err := u.balance(in.addrDesc)
		if err != nil {
			return err
		}
		if ab.sent < in.value {
			return corrupt(cfAddressBalance, in.addrDesc, "sent amount below %d while disconnecting block %d", in.value, u.height)
		}
		ab.sent -= in.value
		ab.balance += in.value
		u.touch(in.addrDesc, &bt.txid)
		// An output of this same block is removed again by outputs().
		if !sameBlock {
			if err := u.ix.restoreUtxo(ab, in.addrDesc, utxo{txid: po.txid, vout: po.vout, height: prevHeight, value: in.value}); err != nil {
				return err
			}
		}
	}
	return nil
}

// restoreP2PK gives the workset back the output that input i of bt,
// undone, spent, if it pays a pay-to-pubkey script (the input's mark in
// the p2pk column says so), when the workset must know every such output.
func (u *undo) restoreP2PK(bt *blockTx, i int, spentDesc []byte) error {
	if !u.ws.allP2PK || !IsP2PKHShape(spentDesc) {
		return nil
	}
	p2pk, err := u.ix.p2pkMark(&bt.txid, uint32(i), true)
	if p2pk {
		u.ws.paysP2PK(&bt.inputs[i].txid, int(bt.inputs[i].vout))
	}
	return err
}

// prevTx returns an earlier transaction, to be changed; nil when it is
// not indexed.
func (u *undo) prevTx(txid *chainhash.Hash) (*txAddresses, error) {
	return u.ws.txAddresses(txid)
}

func (u *undo) outputs(bt *blockTx, ta *txAddresses) error {
	for i := range ta.outputs {
		delete(u.ws.p2pk, outpointKey{bt.txid, int32(i)}) // gone with its block
		out := &ta.outputs[i]
		if !indexable(out.addrDesc) {
			continue
		}
		ab, err := u.balance(out.addrDesc)
		if err != nil {
			return err
		}
		if ab.balance < out.value {
			return corrupt(cfAddressBalance, out.addrDesc, "balance below %d while disconnecting block %d", out.value, u.height)
		}
		ab.balance -= out.value
		// Absent when an input of this block spent it.
		ab.spendUtxo(&bt.txid, int32(i))
		u.touch(out.addrDesc, &bt.txid)
	}
	return nil
}

// write counts the block's transactions out of the balances and removes
// the block's own entries; the changed balances and earlier transactions
// stay in the workset for its flush.
func (u *undo) write(wb writes, btxs []blockTx) error {
	for addrDesc, txs := range u.pairs {
		ab, err := u.balance([]byte(addrDesc))
		if err != nil {
			return err
		}
		if ab.txs < uint32(len(txs)) {
			return corrupt(cfAddressBalance, []byte(addrDesc), "%d transactions, block %d removes %d", ab.txs, u.height, len(txs))
		}
		ab.txs -= uint32(len(txs))
		if err := wb.Delete(addressKey([]byte(addrDesc), u.height), nil); err != nil {
			return err
		}
	}
	for i := range btxs {
		u.ws.dropTxAddresses(&btxs[i].txid)
		key := packedHash(&btxs[i].txid)
		if err := wb.Delete(cfTxAddresses.key(key), nil); err != nil {
			return err
		}
		if err := wb.Delete(cfTransactions.key(key), nil); err != nil {
			return err
		}
	}
	if err := wb.Delete(heightKey(cfBlockTxs, u.height), nil); err != nil {
		return err
	}
	return wb.Delete(heightKey(cfHeight, u.height), nil)
}

// restoreUtxo puts a utxo back where connect had appended it. The list
// is ordered by (height, position of the tx in its block, vout), because
// connect appends each block's outputs in that order and spends only
// remove. Among utxos of the same height, the block position of each tx
// comes from the address's addresses entry for that height, which lists
// the txs with outputs to the address in block order (reversed).
func (ix *Index) restoreUtxo(ab *addrBalance, addrDesc []byte, r utxo) error {
	ab.compact()
	us := ab.utxos
	lo := sort.Search(len(us), func(i int) bool { return us[i].height >= r.height })
	hi := sort.Search(len(us), func(i int) bool { return us[i].height > r.height })
	at := lo
	if lo < hi {
		rank, err := ix.blockTxRanks(addrDesc, r.height)
		if err != nil {
			return err
		}
		rr, ok := rank[r.txid]
		at = hi
		for j := lo; j < hi && ok; j++ {
			rj, okj := rank[us[j].txid]
			if !okj {
				ok = false
				break
			}
			if rj > rr || (rj == rr && us[j].vout > r.vout) {
				at = j
				break
			}
		}
		if !ok {
			return corrupt(cfAddresses, addressKey(addrDesc, r.height)[1:], "does not list the utxos of height %d", r.height)
		}
	}
	ab.utxos = append(ab.utxos, utxo{})
	copy(ab.utxos[at+1:], ab.utxos[at:])
	ab.utxos[at] = r
	ab.byOutpoint = nil
	return nil
}

// blockTxRanks returns the block order of the txs in which addrDesc
// occurs at height.
func (ix *Index) blockTxRanks(addrDesc []byte, height uint32) (map[chainhash.Hash]int, error) {
	key := addressKey(addrDesc, height)[1:]
	val, err := ix.get(cfAddresses, key)
	if err != nil {
		return nil, err
	}
	txs, err := unpackTxIndexes(key, val)
	if err != nil {
		return nil, err
	}
	rank := make(map[chainhash.Hash]int, len(txs))
	for i := range txs {
		rank[txs[i].txid] = len(txs) - 1 - i // stored newest first
	}
	return rank, nil
}
