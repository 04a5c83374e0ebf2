package server

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/txscript"

	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/utxo"
)

// addressJSON is Blockbook's /api/v2/address/{address} shape with
// details=txids (amounts in satoshis as decimal strings). Balance, txs and
// txids are the confirmed state, the blocks the index holds.
// UnconfirmedBalance and UnconfirmedTxs are what the store holds beyond
// them: outputs of the address that transactions not yet in a block spend
// (negative), and how many such transactions. Outputs paid to the address
// by unmined transactions are not counted: the store keeps no addresses.
type addressJSON struct {
	Page               int      `json:"page"`
	TotalPages         int      `json:"totalPages"`
	ItemsOnPage        int      `json:"itemsOnPage"`
	Address            string   `json:"address"`
	Balance            string   `json:"balance"`
	TotalReceived      string   `json:"totalReceived"`
	TotalSent          string   `json:"totalSent"`
	UnconfirmedBalance string   `json:"unconfirmedBalance"`
	UnconfirmedTxs     int      `json:"unconfirmedTxs"`
	Txs                int      `json:"txs"`
	Txids              []string `json:"txids,omitempty"`
}

// utxoJSON is one item of Blockbook's /api/v2/utxo/{address}.
type utxoJSON struct {
	Txid          string `json:"txid"`
	Vout          uint32 `json:"vout"`
	Value         string `json:"value"`
	Height        uint32 `json:"height"`
	Confirmations uint32 `json:"confirmations"`
}

// networkParams maps the store's network to address encodings.
func networkParams(network string) *chaincfg.Params {
	switch network {
	case "testnet", "testnet3":
		return &chaincfg.TestNet3Params
	case "regtest":
		return &chaincfg.RegressionNetParams
	case "signet":
		return &chaincfg.SigNetParams
	}
	return &chaincfg.MainNetParams
}

// addrDesc turns the path parameter into an address descriptor: an address
// of the store's network, or an output script in hex (a pay-to-pubkey script
// names its key's pay-to-pubkey-hash descriptor, index.AddrDesc).
// DecodeAddress takes a bech32 address of any known network, so the
// network is checked again.
func (s *Server) addrDesc(param string) ([]byte, bool) {
	params := networkParams(s.opts.Network)
	if addr, err := btcutil.DecodeAddress(param, params); err == nil && addr.IsForNet(params) {
		if script, err := txscript.PayToAddrScript(addr); err == nil {
			return script, true
		}
	}
	if b, err := hex.DecodeString(param); err == nil && len(b) > 0 {
		return index.AddrDesc(b), true
	}
	return nil, false
}

// addressRequest returns the index and the address descriptor a request
// names, or answers it: 404 when the index is off, 400 for a malformed
// address.
func (s *Server) addressRequest(w http.ResponseWriter, r *http.Request) (idx *index.Index, param string, desc []byte, ok bool) {
	if idx = s.backend.AddressIndex(); idx == nil {
		writeError(w, http.StatusNotFound, "the address index is off; start serve with --index")
		return nil, "", nil, false
	}
	param = r.PathValue("address")
	if desc, ok = s.addrDesc(param); !ok {
		writeError(w, http.StatusBadRequest, "%s is neither a %s address nor an output script in hex", echoed(param), s.opts.Network)
	}
	return idx, param, desc, ok
}

func (s *Server) handleAddress(w http.ResponseWriter, r *http.Request) {
	idx, param, desc, ok := s.addressRequest(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	page, err1 := queryUint32(q, "page", 1)
	pageSize, err2 := queryUint32(q, "pageSize", 1000)
	from, err3 := queryUint32(q, "from", 0)
	to, err4 := queryUint32(q, "to", 0)
	if err := errors.Join(err1, err2, err3, err4); err != nil || page < 1 || pageSize < 1 || pageSize > 1000 {
		writeError(w, http.StatusBadRequest, "page (1..4294967295), pageSize (1..1000), from and to (block heights, 0..4294967295) must be integers in range")
		return
	}
	bal, err := idx.Balance(desc)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "reading the balance of %s: %v", echoed(param), err)
		return
	}
	hist, err := idx.History(desc, int(page), int(pageSize), from, to)
	if err == nil && hist.Page > hist.TotalPages && hist.TotalPages > 0 {
		// A page past the end is the last page, as Blockbook answers it.
		hist, err = idx.History(desc, hist.TotalPages, int(pageSize), from, to)
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "reading the history of %s: %v", echoed(param), err)
		return
	}
	spent, err := s.spentUnconfirmed(r.Context(), bal.UTXOs)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "reading the outputs of %s from the store: %v", echoed(param), err)
		return
	}
	var unconfirmed int64
	spenders := map[chainhash.Hash]bool{}
	for i, by := range spent {
		if by != nil {
			unconfirmed -= int64(bal.UTXOs[i].Value)
			spenders[*by] = true
		}
	}
	out := addressJSON{
		Page: hist.Page, TotalPages: hist.TotalPages, ItemsOnPage: hist.PageSize,
		Address: param, Balance: strconv.FormatUint(bal.Balance, 10),
		TotalReceived: strconv.FormatUint(bal.Received(), 10), TotalSent: strconv.FormatUint(bal.Sent, 10),
		UnconfirmedBalance: sats(unconfirmed), UnconfirmedTxs: len(spenders), Txs: int(bal.Txs),
	}
	for _, tx := range hist.Txs {
		out.Txids = append(out.Txids, tx.TxID.String())
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleUtxo(w http.ResponseWriter, r *http.Request) {
	idx, param, desc, ok := s.addressRequest(w, r)
	if !ok {
		return
	}
	utxos, err := idx.UTXOs(desc)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "reading the UTXOs of %s: %v", echoed(param), err)
		return
	}
	confirmedOnly := r.URL.Query().Get("confirmed") == "true"
	spent, err := s.spentUnconfirmed(r.Context(), utxos)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "reading the outputs of %s from the store: %v", echoed(param), err)
		return
	}
	best, _, err := idx.BestBlock()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "reading the index tip: %v", err)
		return
	}
	// Blockbook lists the newest first; the index keeps them oldest first.
	out := make([]utxoJSON, 0, len(utxos))
	for i := len(utxos) - 1; i >= 0; i-- {
		if spent[i] != nil && !confirmedOnly {
			continue
		}
		u := utxos[i]
		out = append(out, utxoJSON{Txid: u.TxID.String(), Vout: u.Vout, Value: strconv.FormatUint(u.Value, 10),
			Height: u.Height, Confirmations: best.Height - u.Height + 1})
	}
	writeJSON(w, http.StatusOK, out)
}

// spentUnconfirmed returns, for each of the index's unspent outputs, the
// transaction that spends it in the store, or nil. The index follows
// blocks; the store also takes spends of transactions no block holds yet
// (Blockbook's "spent in the mempool"). An output the store no longer holds
// is taken as unspent: the index is the authority on confirmed state.
func (s *Server) spentUnconfirmed(ctx context.Context, utxos []index.Utxo) ([]*chainhash.Hash, error) {
	var items []*utxo.UnresolvedMetaData
	seen := map[chainhash.Hash]bool{}
	for _, u := range utxos {
		if !seen[u.TxID] {
			seen[u.TxID] = true
			items = append(items, &utxo.UnresolvedMetaData{TxID: u.TxID})
		}
	}
	if len(items) == 0 {
		return nil, nil
	}
	if err := s.backend.BatchDecorate(ctx, items, utxo.FieldOutputs); err != nil {
		return nil, err
	}
	outputs := map[chainhash.Hash][]utxo.OutputState{}
	for _, it := range items {
		if it.Err == nil && it.Meta != nil {
			outputs[it.TxID] = it.Meta.Outputs
		}
	}
	spent := make([]*chainhash.Hash, len(utxos))
	for i, u := range utxos {
		if outs := outputs[u.TxID]; int(u.Vout) < len(outs) && outs[u.Vout].SpendingData != nil {
			by := outs[u.Vout].SpendingData.TxID
			spent[i] = &by
		}
	}
	return spent, nil
}

// queryUint32 parses the query parameter name: a decimal integer that fits
// 32 bits (block heights, pages), or def when it is absent.
func queryUint32(q url.Values, name string, def uint32) (uint32, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return uint32(n), nil
}
