package index

import (
	"fmt"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// ConnectBlock indexes b, which must be the block after the tip (any
// height for an empty index), in one atomic batch.
func (ix *Index) ConnectBlock(b *Block) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := ix.writable(); err != nil {
		return err
	}
	if err := ix.checkNext(b); err != nil {
		return err
	}
	wb := ix.db.NewBatch()
	defer wb.Close()
	ws := newWorkset(ix)
	win := ix.win
	if err := ix.connect(ws, wb, &win, b); err != nil {
		return err
	}
	if err := ws.flush(wb); err != nil {
		return err
	}
	if err := wb.Commit(ix.wo); err != nil {
		return fmt.Errorf("index: connect block %d: %w", b.Height, err)
	}
	ix.hasTip, ix.tip, ix.win = true, b.Height, win
	return nil
}

func (ix *Index) writable() error {
	if ix.db == nil {
		return ErrClosed
	}
	if ix.bulk != nil {
		return ErrBulkActive
	}
	return nil
}

func (ix *Index) checkNext(b *Block) error {
	if ix.hasTip && b.Height != ix.tip+1 {
		return fmt.Errorf("%w: tip is %d, block is %d", ErrNotNext, ix.tip, b.Height)
	}
	return nil
}

// blockAddresses collects, per address, the transactions of one block in
// which it appears, in order of first appearance (outputs of all
// transactions first, then inputs), which is the order Blockbook records.
type blockAddresses map[string][]txIndexes

// add records index for addrDesc in txid and reports whether the pair is
// new, i.e. whether it counts as one more transaction of the address.
func (ba blockAddresses) add(addrDesc []byte, txid *chainhash.Hash, index int32) bool {
	txs := ba[string(addrDesc)]
	for i := range txs {
		if txs[i].txid == *txid {
			txs[i].indexes = append(txs[i].indexes, index)
			return false
		}
	}
	ba[string(addrDesc)] = append(txs, txIndexes{txid: *txid, indexes: []int32{index}})
	return true
}

// connect applies b to ws and writes the per-block columns (height,
// addresses, blockTxs) into wb. Outputs of every transaction are
// processed before any input, so inputs can spend outputs of the same
// block; that order also fixes the order of the addresses values.
func (ix *Index) connect(ws *workset, wb writes, win *window, b *Block) error {
	addrs := make(blockAddresses)
	tas := make([]*txAddresses, len(b.Txs))
	for ti := range b.Txs {
		tx := &b.Txs[ti]
		ta := &txAddresses{height: b.Height, outputs: make([]txOutput, len(tx.Outputs))}
		ws.putTxAddresses(&tx.ID, ta)
		tas[ti] = ta
		for i := range tx.Outputs {
			out := &tx.Outputs[i]
			ta.outputs[i].value = out.Value
			addrDesc := AddrDesc(out.Script)
			if len(addrDesc) == 0 || len(addrDesc) > maxAddrDescLen {
				continue
			}
			ta.outputs[i].addrDesc = addrDesc
			if !indexable(addrDesc) {
				continue
			}
			if err := electrumOutput(wb, &tx.ID, i, out.Script, addrDesc); err != nil {
				return err
			}
			if len(out.Script) != len(addrDesc) {
				ws.paysP2PK(&tx.ID, i)
			}
			ab, err := ws.balance(addrDesc)
			if err != nil {
				return err
			}
			ab.balance += out.Value
			ab.addUtxo(utxo{txid: tx.ID, vout: int32(i), height: b.Height, value: out.Value})
			if addrs.add(addrDesc, &tx.ID, int32(i)) {
				ab.txs++
			}
		}
	}
	for ti := range b.Txs {
		if err := ix.connectInputs(ws, wb, addrs, b, &b.Txs[ti], tas[ti]); err != nil {
			return err
		}
	}
	if err := wb.Set(heightKey(cfHeight, b.Height), packBlockInfo(&BlockInfo{
		Hash: b.Hash, Time: b.Time, Txs: uint32(len(b.Txs)), Size: b.Size,
	}), nil); err != nil {
		return err
	}
	for addrDesc, txs := range addrs {
		if err := wb.Set(addressKey([]byte(addrDesc), b.Height), packTxIndexes(txs), nil); err != nil {
			return err
		}
	}
	return ix.storeBlockTxs(wb, win, b)
}

func (ix *Index) connectInputs(ws *workset, wb writes, addrs blockAddresses, b *Block, tx *Tx, ta *txAddresses) error {
	ta.inputs = make([]txInput, len(tx.Inputs))
	for i := range tx.Inputs {
		in := &tx.Inputs[i]
		if in.Coinbase {
			continue
		}
		prev, err := ws.txAddresses(&in.TxID)
		if err != nil {
			return err
		}
		if prev == nil || int(in.Vout) >= len(prev.outputs) {
			// The spent output was never indexed (the index started
			// above genesis); Blockbook keeps an empty input.
			continue
		}
		spent := &prev.outputs[in.Vout]
		if spent.spent {
			return fmt.Errorf("index: block %d tx %s input %d spends %s:%d, which is already spent", b.Height, tx.ID, i, in.TxID, in.Vout)
		}
		spent.spent = true
		ta.inputs[i] = txInput{addrDesc: spent.addrDesc, value: spent.value}
		if !indexable(spent.addrDesc) {
			continue
		}
		if err := electrumInput(ws, wb, tx, i, spent.addrDesc); err != nil {
			return err
		}
		ab, err := ws.balance(spent.addrDesc)
		if err != nil {
			return err
		}
		if ab.balance < spent.value || !ab.spendUtxo(&in.TxID, int32(in.Vout)) {
			return corrupt(cfAddressBalance, spent.addrDesc, "utxo %s:%d of %d sat is not in the balance", in.TxID, in.Vout, spent.value)
		}
		ab.balance -= spent.value
		ab.sent += spent.value
		if addrs.add(spent.addrDesc, &tx.ID, ^int32(i)) {
			ab.txs++
		}
	}
	return nil
}

// storeBlockTxs writes the rollback data of b and prunes entries that
// fell out of the window. The lowest stored height is tracked in memory,
// so pruning is point deletes of known keys: no reads (a bulk batch is not
// readable) and no range tombstones (which Pebble would consult on every
// later read until compaction).
func (ix *Index) storeBlockTxs(wb writes, win *window, b *Block) error {
	txs := make([]blockTx, len(b.Txs))
	for ti := range b.Txs {
		tx := &b.Txs[ti]
		txs[ti] = blockTx{txid: tx.ID, inputs: make([]prevOut, len(tx.Inputs))}
		for i := range tx.Inputs {
			if in := &tx.Inputs[i]; !in.Coinbase {
				txs[ti].inputs[i] = prevOut{txid: in.TxID, vout: int32(in.Vout)}
			}
		}
	}
	if err := wb.Set(heightKey(cfBlockTxs, b.Height), packBlockTxs(txs), nil); err != nil {
		return err
	}
	if !win.any {
		win.any, win.low = true, b.Height
	}
	keep := uint32(ix.opts.RollbackBlocks)
	for ; b.Height >= keep && win.low <= b.Height-keep; win.low++ {
		if err := wb.Delete(heightKey(cfBlockTxs, win.low), nil); err != nil {
			return err
		}
	}
	return nil
}

// window is the range of heights blockTxs holds: low up to the tip.
type window struct {
	any bool
	low uint32
}
