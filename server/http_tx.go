package server

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/utxo"
)

// txJSON is Blockbook's /api/v2/tx/{txid} shape for Bitcoin-type coins;
// fields Blockbook has no place for go under "utxostore".
type txJSON struct {
	TxID          string     `json:"txid"`
	Version       int32      `json:"version,omitempty"`
	LockTime      uint32     `json:"lockTime,omitempty"`
	Vin           []vinJSON  `json:"vin"`
	Vout          []voutJSON `json:"vout"`
	BlockHash     string     `json:"blockHash,omitempty"`
	BlockHeight   int64      `json:"blockHeight"` // -1 while unmined, as Blockbook
	Confirmations uint32     `json:"confirmations"`
	Size          int        `json:"size,omitempty"`
	Value         string     `json:"value"`
	ValueIn       string     `json:"valueIn,omitempty"`
	Fees          string     `json:"fees,omitempty"`
	Hex           string     `json:"hex,omitempty"`
	Utxostore     txState    `json:"utxostore"`
}

type vinJSON struct {
	TxID     string `json:"txid,omitempty"`
	Vout     uint32 `json:"vout,omitempty"`
	Sequence uint32 `json:"sequence,omitempty"`
	N        int    `json:"n"`
	Value    string `json:"value,omitempty"`
	Hex      string `json:"hex,omitempty"`
	Coinbase string `json:"coinbase,omitempty"`
}

type voutJSON struct {
	Value      string `json:"value"`
	N          int    `json:"n"`
	Spent      bool   `json:"spent,omitempty"`
	SpentTxID  string `json:"spentTxId,omitempty"`
	SpentIndex uint32 `json:"spentIndex,omitempty"`
	Hex        string `json:"hex,omitempty"`
	// State is utxostore's: unspent, spent, frozen, locked, conflicting
	// or not_stored (a zero-value output the store does not keep).
	State       string `json:"state"`
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

func (s *Server) handleTx(w http.ResponseWriter, r *http.Request) {
	txid, err := chainhash.NewHashFromStr(r.PathValue("txid"))
	if err != nil || len(r.PathValue("txid")) != 2*chainhash.HashSize {
		writeError(w, http.StatusBadRequest, "malformed txid %s: want 64 hex digits", echoed(r.PathValue("txid")))
		return
	}
	meta, err := s.backend.Get(r.Context(), *txid, utxo.FieldTx, utxo.FieldOutputs)
	if errors.Is(err, utxo.ErrTxNotFound) {
		writeError(w, http.StatusNotFound, "transaction %s not found", txid)
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "reading transaction %s: %v", txid, err)
		return
	}
	out, err := s.txJSON(r, meta)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "transaction %s: %v", txid, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) txJSON(r *http.Request, meta *utxo.Meta) (txJSON, error) {
	tx := meta.Tx.Msg
	out := txJSON{TxID: meta.TxID.String(), Version: tx.Version, LockTime: tx.LockTime, BlockHeight: -1,
		Size: meta.Tx.Size(), Hex: hex.EncodeToString(meta.Tx.Raw),
		Utxostore: txState{MinedBlocks: []minedJSON{}, Coinbase: meta.IsCoinbase, Locked: meta.Locked, Creating: meta.Creating,
			Conflicting: meta.Conflicting, Frozen: meta.Frozen, External: meta.External, UnminedSince: meta.UnminedSince,
			DeleteAtHeight: meta.DeleteAtHeight, PreserveUntil: meta.PreserveUntil, Records: meta.Records}}
	for i, id := range meta.BlockIDs {
		m := minedJSON{BlockID: id}
		if i < len(meta.BlockHeights) {
			m.BlockHeight = meta.BlockHeights[i]
			if b, ok, err := s.backend.BlockAt(r.Context(), m.BlockHeight); err == nil && ok {
				m.BlockHash = b.Hash.String()
			}
		}
		out.Utxostore.MinedBlocks = append(out.Utxostore.MinedBlocks, m)
	}
	if len(out.Utxostore.MinedBlocks) > 0 && meta.UnminedSince == 0 {
		first := out.Utxostore.MinedBlocks[0]
		out.BlockHeight, out.BlockHash = int64(first.BlockHeight), first.BlockHash
		tip, ok, err := s.backend.Tip(r.Context())
		if err != nil {
			return txJSON{}, fmt.Errorf("reading the tip: %w", err)
		}
		if ok && tip.Height >= first.BlockHeight {
			out.Confirmations = tip.Height - first.BlockHeight + 1
		}
	}
	var valueIn int64
	var prevErr error
	if !meta.IsCoinbase {
		outs, err := s.backend.PreviousOutputsDecorate(r.Context(), meta.Tx)
		prevErr = err
		for _, o := range outs {
			if o != nil {
				valueIn += o.Value
			}
		}
		for i, in := range tx.TxIn {
			v := vinJSON{TxID: in.PreviousOutPoint.Hash.String(), Vout: in.PreviousOutPoint.Index, Sequence: in.Sequence,
				N: i, Hex: hex.EncodeToString(in.SignatureScript)}
			if err == nil && i < len(outs) && outs[i] != nil {
				v.Value = sats(outs[i].Value)
			}
			out.Vin = append(out.Vin, v)
		}
	} else {
		for i, in := range tx.TxIn {
			out.Vin = append(out.Vin, vinJSON{N: i, Sequence: in.Sequence, Coinbase: hex.EncodeToString(in.SignatureScript)})
		}
	}
	var value int64
	for i, o := range tx.TxOut {
		value += o.Value
		v := voutJSON{Value: sats(o.Value), N: i, Hex: hex.EncodeToString(o.PkScript), State: "not_stored"}
		if i < len(meta.Outputs) {
			v = outputState(v, meta, meta.Outputs[i])
		}
		out.Vout = append(out.Vout, v)
	}
	out.Value = sats(value)
	// valueIn and fees need every parent; a parent already deleted (fully
	// spent and past its delete-at-height) leaves them out.
	if !meta.IsCoinbase && prevErr == nil {
		out.ValueIn, out.Fees = sats(valueIn), sats(valueIn-value)
	}
	return out, nil
}

// outputState fills the per-output state from the record.
func outputState(v voutJSON, meta *utxo.Meta, o utxo.OutputState) voutJSON {
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
