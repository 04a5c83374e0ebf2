package blockbook

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/internal/httpreply"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// txJSON is Blockbook v0.3.4's api.Tx for Bitcoin-type coins, field for
// field; what Blockbook has no place for (the record's lifecycle) goes
// under "utxostore" when the store holds the record.
type txJSON struct {
	TxID          string     `json:"txid"`
	Version       int32      `json:"version,omitempty"`
	LockTime      uint32     `json:"lockTime,omitempty"`
	Vin           []vinJSON  `json:"vin"`
	Vout          []voutJSON `json:"vout"`
	BlockHash     string     `json:"blockHash,omitempty"`
	BlockHeight   int64      `json:"blockHeight"` // -1 while unmined, as Blockbook
	Confirmations uint32     `json:"confirmations"`
	BlockTime     int64      `json:"blockTime"`
	Value         string     `json:"value"`
	ValueIn       string     `json:"valueIn,omitempty"`
	Fees          string     `json:"fees,omitempty"`
	Hex           string     `json:"hex,omitempty"`
	Utxostore     *txState   `json:"utxostore,omitempty"`
}

type vinJSON struct {
	TxID      string   `json:"txid,omitempty"`
	Vout      uint32   `json:"vout,omitempty"`
	Sequence  int64    `json:"sequence,omitempty"`
	N         int      `json:"n"`
	Addresses []string `json:"addresses,omitempty"`
	IsAddress bool     `json:"isAddress"`
	Value     string   `json:"value,omitempty"`
	Hex       string   `json:"hex,omitempty"`
	Coinbase  string   `json:"coinbase,omitempty"`
}

type voutJSON struct {
	Value       string   `json:"value,omitempty"`
	N           int      `json:"n"`
	Spent       bool     `json:"spent,omitempty"`
	SpentTxID   string   `json:"spentTxId,omitempty"`
	SpentIndex  uint32   `json:"spentIndex,omitempty"`
	SpentHeight uint32   `json:"spentHeight,omitempty"`
	Hex         string   `json:"hex,omitempty"`
	Addresses   []string `json:"addresses"`
	IsAddress   bool     `json:"isAddress"`
	// State is utxostore's: unspent, spent, frozen, locked, conflicting
	// or not_stored (a zero-value output the store does not keep); absent
	// when the store no longer holds the record.
	State       string `json:"state,omitempty"`
	SpentBy     string `json:"spentBy,omitempty"` // "<txid>:<vin>"
	UTXOHash    string `json:"utxoHash,omitempty"`
	SpendableIn uint32 `json:"spendableIn,omitempty"`
}

// txState is the record's lifecycle state, which Blockbook does not have.
type txState struct {
	MinedBlocks    []minedJSON `json:"minedBlocks"`
	Coinbase       bool        `json:"coinbase,omitempty"`
	Locked         bool        `json:"locked,omitempty"`
	Creating       bool        `json:"creating,omitempty"`
	Conflicting    bool        `json:"conflicting,omitempty"`
	Frozen         bool        `json:"frozen,omitempty"`
	External       bool        `json:"external,omitempty"`
	UnminedSince   uint32      `json:"unminedSince,omitempty"`
	DeleteAtHeight uint32      `json:"deleteAtHeight,omitempty"`
	PreserveUntil  uint32      `json:"preserveUntil,omitempty"`
	Records        int         `json:"records"`
}

type minedJSON struct {
	BlockID     uint32 `json:"blockId"`
	BlockHeight uint32 `json:"blockHeight"`
	BlockHash   string `json:"blockHash,omitempty"`
}

// foundTx is a transaction and where it is: in a block the block store
// holds (Height >= 0), or only in the store (unmined, or mined with no
// block store).
type foundTx struct {
	Msg       *wire.MsgTx
	Raw       []byte
	ID        chainhash.Hash
	Height    int64 // -1 while unmined
	BlockHash chainhash.Hash
	BlockTime int64
	Spent     []bool     // from the index; nil when it does not hold the tx
	Meta      *utxo.Meta // the store's record; nil when it holds none
}

// findTx looks txid up in the index and the block store first (every
// confirmed transaction, spent or not), then in the store (unmined ones,
// and all of them when the daemon runs without --index). ok is false when
// neither holds it.
func (a *API) findTx(ctx context.Context, txid chainhash.Hash) (*foundTx, bool, error) {
	if idx, blocks := a.reads.AddressIndex(), a.reads.BlockStore(); idx != nil && blocks != nil {
		ta, ok, err := idx.TxAddresses(txid)
		if err != nil {
			return nil, false, err
		}
		if ok {
			mb, err := a.blockAt(ctx, ta.Height)
			if err != nil {
				return nil, false, err
			}
			if mb != nil {
				for _, tx := range mb.Txs {
					if tx.ID == txid {
						ft, err := a.inBlock(ctx, tx, ta.Height, mb.Hash, mb.Header.Timestamp.Unix())
						return ft, err == nil, err
					}
				}
			}
		}
	}
	meta, err := a.reads.Get(ctx, txid, utxo.FieldTx, utxo.FieldOutputs)
	if errors.Is(err, model.ErrTxNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	ft := &foundTx{Msg: meta.Tx.Msg, Raw: meta.Tx.Raw, ID: txid, Height: -1, Meta: meta}
	if len(meta.BlockHeights) > 0 && meta.UnminedSince == 0 {
		ft.Height = int64(meta.BlockHeights[0])
		b, ok, err := a.reads.BlockAt(ctx, meta.BlockHeights[0])
		if err != nil {
			return nil, false, err
		}
		if ok {
			ft.BlockHash, ft.BlockTime = b.Hash, b.Time
		}
	}
	return ft, true, nil
}

// RawTx is a transaction's bytes and the height of the block holding it
// (-1 while unmined), from the index and the block store or the store, as
// every route finds a transaction; ok is false when none holds it. The
// Electrum protocol's blockchain.transaction.get reads it.
func (a *API) RawTx(ctx context.Context, txid chainhash.Hash) (raw []byte, height int64, ok bool, err error) {
	ft, ok, err := a.findTx(ctx, txid)
	if err != nil || !ok {
		return nil, 0, false, err
	}
	return ft.Raw, ft.Height, true, nil
}

// inBlock is tx of the block at height (of hash and time), with what the
// index and the store know of it.
func (a *API) inBlock(ctx context.Context, tx *chain.Tx, height uint32, hash chainhash.Hash, time int64) (*foundTx, error) {
	txid := tx.ID
	ft := &foundTx{Msg: tx.Msg, Raw: tx.Raw, ID: txid, Height: int64(height), BlockHash: hash, BlockTime: time}
	ta, ok, err := a.reads.AddressIndex().TxAddresses(txid)
	if err != nil {
		return nil, err
	}
	if ok {
		for _, o := range ta.Outputs {
			ft.Spent = append(ft.Spent, o.Spent)
		}
	}
	meta, err := a.reads.Get(ctx, txid, utxo.FieldTx, utxo.FieldOutputs)
	if errors.Is(err, model.ErrTxNotFound) {
		return ft, nil
	}
	ft.Meta = meta
	return ft, err
}

// blockAt returns the block at height from the block store, parsed; nil
// when the store does not hold it (pruned, or connected before the block
// store existed). Within a request (withLastBlock) a block asked for again
// is not read again.
func (a *API) blockAt(ctx context.Context, height uint32) (*chain.Block, error) {
	last, _ := ctx.Value(lastBlockKey{}).(*lastBlock)
	if last != nil {
		last.mu.Lock()
		defer last.mu.Unlock()
		if last.block != nil && last.height == height {
			return last.block, nil
		}
	}
	raw, _, ok, err := a.reads.BlockStore().Block(height)
	if err != nil || !ok {
		return nil, err
	}
	mb, err := parseBlock(raw, height)
	if err == nil && last != nil {
		last.height, last.block = height, mb
	}
	return mb, err
}

// lastBlock is the block a request read last. A page of transactions
// lists them by height, so those of one block follow each other, and the
// spenders of a transaction's outputs are often in one block: keeping the
// last block read has each read and parsed once, and a request holds one
// block at most.
type lastBlock struct {
	mu     sync.Mutex
	height uint32
	block  *chain.Block // nil until a block is read
}

type lastBlockKey struct{}

// withLastBlock is ctx with a lastBlock for blockAt, unless it has one.
func withLastBlock(ctx context.Context) context.Context {
	if _, ok := ctx.Value(lastBlockKey{}).(*lastBlock); ok {
		return ctx
	}
	return context.WithValue(ctx, lastBlockKey{}, &lastBlock{})
}

// parseBlock parses the raw block the block store holds at height with
// the block path's parser, which took it: wire's refuses blocks BSV has
// (over 400,001 transactions) and panics on a transaction whose scripts
// pass 4 MiB.
func parseBlock(raw []byte, height uint32) (*chain.Block, error) {
	mb, err := chain.ParseBlock(raw)
	if err != nil {
		return nil, fmt.Errorf("block %d in the block store: %w", height, err)
	}
	return mb, nil
}

// tipHeight is the height confirmations count from: the index's tip when
// the index is on (it is what the API's confirmed state reflects), else the
// store's.
func (a *API) tipHeight(ctx context.Context) (uint32, bool, error) {
	if idx := a.reads.AddressIndex(); idx != nil {
		best, ok, err := idx.BestBlock()
		return best.Height, ok, err
	}
	tip, ok, err := a.reads.Tip(ctx)
	return tip.Height, ok, err
}

// prevOutput is what an input spends: its value and address descriptor.
type prevOutput struct {
	value    uint64
	addrDesc []byte
}

// prevOutputs finds what each input of tx spends: from the index's
// txAddresses (any confirmed parent, spent or not), else from the store
// (unconfirmed parents). A nil entry is an output neither holds.
func (a *API) prevOutputs(ctx context.Context, tx *wire.MsgTx) ([]*prevOutput, error) {
	prevs := make([]*prevOutput, len(tx.TxIn))
	if isCoinbaseTx(tx) {
		return prevs, nil
	}
	missing := false
	if idx := a.reads.AddressIndex(); idx != nil {
		for i, in := range tx.TxIn {
			ta, ok, err := idx.TxAddresses(in.PreviousOutPoint.Hash)
			if err != nil {
				return nil, err
			}
			if ok && int(in.PreviousOutPoint.Index) < len(ta.Outputs) {
				o := ta.Outputs[in.PreviousOutPoint.Index]
				prevs[i] = &prevOutput{value: o.Value, addrDesc: o.AddrDesc}
			} else {
				missing = true
			}
		}
	} else {
		missing = true
	}
	if !missing {
		return prevs, nil
	}
	outs, err := a.reads.PreviousOutputsDecorate(ctx, chain.NewTx(tx))
	if err != nil {
		return prevs, nil // a parent the store no longer holds: value unknown
	}
	for i, o := range outs {
		if prevs[i] == nil && o != nil {
			prevs[i] = &prevOutput{value: uint64(o.Value), addrDesc: index.AddrDesc(o.PkScript)}
		}
	}
	return prevs, nil
}

func isCoinbaseTx(tx *wire.MsgTx) bool {
	return len(tx.TxIn) == 1 && tx.TxIn[0].PreviousOutPoint.Index == wire.MaxPrevOutIndex &&
		tx.TxIn[0].PreviousOutPoint.Hash == (chainhash.Hash{})
}

// apiTx builds Blockbook's Tx from ft. spending fills spentTxId,
// spentIndex and spentHeight of the spent outputs, as Blockbook does with
// ?spending=true.
func (a *API) apiTx(ctx context.Context, ft *foundTx, spending bool) (txJSON, error) {
	tx := ft.Msg
	out := txJSON{TxID: ft.ID.String(), Version: tx.Version, LockTime: tx.LockTime, BlockHeight: ft.Height,
		BlockTime: ft.BlockTime, Hex: hex.EncodeToString(ft.Raw), Vin: []vinJSON{}, Vout: []voutJSON{}}
	if ft.Height >= 0 {
		out.BlockHash = ft.BlockHash.String()
		tip, ok, err := a.tipHeight(ctx)
		if err != nil {
			return txJSON{}, fmt.Errorf("reading the tip: %w", err)
		}
		if ok && int64(tip) >= ft.Height {
			out.Confirmations = tip - uint32(ft.Height) + 1
		}
	}
	prevs, err := a.prevOutputs(ctx, tx)
	if err != nil {
		return txJSON{}, err
	}
	var valueIn, valueOut uint64
	coinbase := isCoinbaseTx(tx)
	for i, in := range tx.TxIn {
		v := vinJSON{N: i, Sequence: int64(in.Sequence)}
		if coinbase {
			v.Coinbase = hex.EncodeToString(in.SignatureScript)
		} else {
			v.TxID, v.Vout, v.Hex = in.PreviousOutPoint.Hash.String(), in.PreviousOutPoint.Index, hex.EncodeToString(in.SignatureScript)
			if p := prevs[i]; p != nil {
				v.Value = strconv.FormatUint(p.value, 10)
				v.Addresses, v.IsAddress = a.addressesOf(p.addrDesc)
				valueIn += p.value
			}
		}
		out.Vin = append(out.Vin, v)
	}
	for i, o := range tx.TxOut {
		valueOut += uint64(o.Value)
		v := voutJSON{Value: sats(o.Value), N: i, Hex: hex.EncodeToString(o.PkScript)}
		v.Addresses, v.IsAddress = a.addressesOf(index.AddrDesc(o.PkScript))
		if i < len(ft.Spent) {
			v.Spent = ft.Spent[i]
		}
		if ft.Meta != nil && i < len(ft.Meta.Outputs) {
			v = outputState(v, ft.Meta, ft.Meta.Outputs[i])
		} else if ft.Meta != nil {
			v.State = "not_stored"
		}
		if spending && v.Spent && v.SpentTxID == "" {
			if err := a.findSpender(ctx, ft, i, &v); err != nil {
				return txJSON{}, err
			}
		}
		if spending && v.SpentTxID != "" && v.SpentHeight == 0 {
			ta, ok, err := a.addressIndexTx(v.SpentTxID)
			if err != nil {
				return txJSON{}, err
			}
			if ok {
				v.SpentHeight = ta.Height
			}
		}
		out.Vout = append(out.Vout, v)
	}
	out.Value = strconv.FormatUint(valueOut, 10)
	// Blockbook: valueIn is 0 for a coinbase, fees never negative.
	out.ValueIn, out.Fees = strconv.FormatUint(valueIn, 10), "0"
	if valueIn > valueOut {
		out.Fees = strconv.FormatUint(valueIn-valueOut, 10)
	}
	if ft.Meta != nil {
		var err error
		if out.Utxostore, err = a.recordState(ctx, ft.Meta); err != nil {
			return txJSON{}, err
		}
	}
	return out, nil
}

func (a *API) addressIndexTx(txid string) (index.TxAddresses, bool, error) {
	idx := a.reads.AddressIndex()
	h, err := chainhash.NewHashFromStr(txid)
	if idx == nil || err != nil {
		return index.TxAddresses{}, false, err
	}
	return idx.TxAddresses(*h)
}

// findSpender finds the transaction that spends output n of ft, as
// Blockbook does: among the inputs of the output's address in blocks from
// ft's on, the one whose previous output is this one. The walk goes
// oldest first, where a spender usually is, and reads the block only of
// an input that spends the output's value: the index knows each input's
// value, and a block is megabytes to read and parse.
func (a *API) findSpender(ctx context.Context, ft *foundTx, n int, v *voutJSON) error {
	idx := a.reads.AddressIndex()
	if idx == nil || a.reads.BlockStore() == nil || ft.Height < 0 {
		return nil
	}
	out := ft.Msg.TxOut[n]
	return idx.WalkHistory(ctx, index.AddrDesc(out.PkScript), uint32(ft.Height), 0, func(h index.HistoryTx) (bool, error) {
		for _, i := range h.Indexes {
			if i >= 0 {
				continue
			}
			ta, ok, err := idx.TxAddresses(h.TxID)
			if err != nil {
				return false, err
			}
			if ok && int(^i) < len(ta.Inputs) && ta.Inputs[^i].Value != uint64(out.Value) {
				continue
			}
			mb, err := a.blockAt(ctx, h.Height)
			if err != nil || mb == nil {
				return mb == nil, err
			}
			for _, tx := range mb.Txs {
				if tx.ID != h.TxID || int(^i) >= len(tx.Msg.TxIn) {
					continue
				}
				prev := tx.Msg.TxIn[^i].PreviousOutPoint
				if prev.Hash == ft.ID && int(prev.Index) == n {
					v.SpentTxID, v.SpentIndex, v.SpentHeight = h.TxID.String(), uint32(^i), h.Height
					return true, nil
				}
			}
		}
		return false, nil
	})
}

// recordState is the store record's lifecycle, under "utxostore".
func (a *API) recordState(ctx context.Context, meta *utxo.Meta) (*txState, error) {
	st := &txState{MinedBlocks: []minedJSON{}, Coinbase: meta.IsCoinbase, Locked: meta.Locked, Creating: meta.Creating,
		Conflicting: meta.Conflicting, Frozen: meta.Frozen, External: meta.External, UnminedSince: meta.UnminedSince,
		DeleteAtHeight: meta.DeleteAtHeight, PreserveUntil: meta.PreserveUntil, Records: meta.Records}
	for i, id := range meta.BlockIDs {
		m := minedJSON{BlockID: id}
		if i < len(meta.BlockHeights) {
			m.BlockHeight = meta.BlockHeights[i]
			b, ok, err := a.reads.BlockAt(ctx, m.BlockHeight)
			if err != nil {
				return nil, err
			}
			if ok {
				m.BlockHash = b.Hash.String()
			}
		}
		st.MinedBlocks = append(st.MinedBlocks, m)
	}
	return st, nil
}

// parseTxid reads a txid path parameter: 64 hex digits.
func parseTxid(param string) (chainhash.Hash, error) {
	if len(param) != 2*chainhash.HashSize {
		return chainhash.Hash{}, fmt.Errorf("txid %s: want 64 hex digits", echoed(param))
	}
	h, err := chainhash.NewHashFromStr(param)
	if err != nil {
		return chainhash.Hash{}, fmt.Errorf("txid %s: want 64 hex digits", echoed(param))
	}
	return *h, nil
}

func (a *API) handleTx(w http.ResponseWriter, r *http.Request) {
	txid, err := parseTxid(r.PathValue("txid"))
	if err != nil {
		httpreply.Error(w, http.StatusBadRequest, "Transaction %s not found (malformed %v)", echoed(r.PathValue("txid")), err)
		return
	}
	spending := false
	if p := r.URL.Query().Get("spending"); p != "" {
		if spending, err = strconv.ParseBool(p); err != nil {
			httpreply.Error(w, http.StatusBadRequest, "Parameter 'spending' cannot be converted to boolean")
			return
		}
	}
	out, code, err := a.txByID(r.Context(), txid, spending)
	writeOutcome(w, out, code, err)
}

// txByID is Blockbook's GetTransaction: the transaction, or an error with
// the status Blockbook answers it with (400 for one it does not know).
func (a *API) txByID(ctx context.Context, txid chainhash.Hash, spending bool) (txJSON, int, error) {
	ctx = withLastBlock(ctx)
	ft, ok, err := a.findTx(ctx, txid)
	if err != nil {
		return txJSON{}, http.StatusInternalServerError, fmt.Errorf("reading transaction %s: %w", txid, err)
	}
	if !ok {
		return txJSON{}, http.StatusBadRequest, errorf("Transaction '%s' not found", txid)
	}
	out, err := a.apiTx(ctx, ft, spending)
	if err != nil {
		return txJSON{}, http.StatusInternalServerError, fmt.Errorf("transaction %s: %w", txid, err)
	}
	return out, http.StatusOK, nil
}

// outputState fills the per-output state from the record.
func outputState(v voutJSON, meta *utxo.Meta, o utxo.OutputState) voutJSON {
	v.State = "not_stored"
	if !o.Stored {
		return v
	}
	v.UTXOHash, v.SpendableIn = o.UTXOHash.String(), o.SpendableIn
	switch {
	case o.Frozen:
		v.State = "frozen"
	case o.SpendingData != nil:
		v.State, v.Spent = "spent", true
		v.SpentTxID, v.SpentIndex = o.SpendingData.TxID.String(), o.SpendingData.Vin
		v.SpentBy = fmt.Sprintf("%s:%d", o.SpendingData.TxID, o.SpendingData.Vin)
	case meta.Conflicting:
		v.State = "conflicting"
	case meta.Locked || meta.Creating:
		v.State = "locked"
	default:
		v.State = "unspent"
	}
	return v
}
