package server

import (
	"encoding/hex"
	"net/http"
	"strconv"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/txscript"

	"github.com/utxostore/utxostore/index"
)

// addressJSON is Blockbook's /api/v2/address/{address} shape with
// details=txids (amounts in satoshis as decimal strings). The index holds no
// mempool, so the unconfirmed fields are always zero.
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

// addrDesc turns the path parameter into an address descriptor (the output
// script): an address of the store's network, or the script in hex.
func (s *Server) addrDesc(param string) ([]byte, bool) {
	if addr, err := btcutil.DecodeAddress(param, networkParams(s.opts.Network)); err == nil {
		if script, err := txscript.PayToAddrScript(addr); err == nil {
			return script, true
		}
	}
	if b, err := hex.DecodeString(param); err == nil && len(b) > 0 {
		return b, true
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
		writeError(w, http.StatusBadRequest, "%q is neither a %s address nor an output script in hex", param, s.opts.Network)
	}
	return idx, param, desc, ok
}

func (s *Server) handleAddress(w http.ResponseWriter, r *http.Request) {
	idx, param, desc, ok := s.addressRequest(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	page, err1 := queryInt(q.Get("page"), 1)
	pageSize, err2 := queryInt(q.Get("pageSize"), 1000)
	from, err3 := queryInt(q.Get("from"), 0)
	to, err4 := queryInt(q.Get("to"), 0)
	if err := firstErr(err1, err2, err3, err4); err != nil || page < 1 || pageSize < 1 || pageSize > 1000 {
		writeError(w, http.StatusBadRequest, "page, pageSize (1..1000), from and to must be non-negative integers")
		return
	}
	bal, err := idx.Balance(desc)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "reading the balance of %s: %v", param, err)
		return
	}
	hist, err := idx.History(desc, page, pageSize, uint32(from), uint32(to))
	if err != nil {
		writeError(w, http.StatusInternalServerError, "reading the history of %s: %v", param, err)
		return
	}
	out := addressJSON{
		Page: hist.Page, TotalPages: hist.TotalPages, ItemsOnPage: hist.PageSize,
		Address: param, Balance: strconv.FormatUint(bal.Balance, 10),
		TotalReceived: strconv.FormatUint(bal.Received(), 10), TotalSent: strconv.FormatUint(bal.Sent, 10),
		UnconfirmedBalance: "0", Txs: int(bal.Txs),
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
		writeError(w, http.StatusInternalServerError, "reading the UTXOs of %s: %v", param, err)
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
		u := utxos[i]
		out = append(out, utxoJSON{Txid: u.TxID.String(), Vout: u.Vout, Value: strconv.FormatUint(u.Value, 10),
			Height: u.Height, Confirmations: best.Height - u.Height + 1})
	}
	writeJSON(w, http.StatusOK, out)
}

func queryInt(v string, def int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err == nil && n < 0 {
		return 0, strconv.ErrRange
	}
	return n, err
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
