package blockbook

import (
	"context"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/internal/httpreply"
	"github.com/utxostore/utxostore/utxo"
)

// addressJSON is Blockbook v0.3.4's api.Address for Bitcoin-type coins
// (amounts in satoshis as decimal strings). Balance, txs and the history
// are the confirmed state, the blocks the index holds; unconfirmedBalance
// and unconfirmedTxs are the store's unmined transactions that pay to or
// spend from the address, as Blockbook shows its mempool. There are no
// tokens for Bitcoin: details=tokens and tokenBalances answer as basic.
type addressJSON struct {
	Page               int      `json:"page,omitempty"`
	TotalPages         int      `json:"totalPages,omitempty"`
	ItemsOnPage        int      `json:"itemsOnPage,omitempty"`
	Address            string   `json:"address"`
	Balance            string   `json:"balance"`
	TotalReceived      string   `json:"totalReceived,omitempty"`
	TotalSent          string   `json:"totalSent,omitempty"`
	UnconfirmedBalance string   `json:"unconfirmedBalance"`
	UnconfirmedTxs     int      `json:"unconfirmedTxs"`
	Txs                int      `json:"txs"`
	Transactions       []txJSON `json:"transactions,omitempty"`
	Txids              []string `json:"txids,omitempty"`
	UsedTokens         int      `json:"usedTokens,omitempty"`
	Tokens             []token  `json:"tokens,omitempty"`
}

// utxoJSON is Blockbook v0.3.4's api.Utxo.
type utxoJSON struct {
	Txid          string `json:"txid"`
	Vout          uint32 `json:"vout"`
	Value         string `json:"value"`
	Height        uint32 `json:"height,omitempty"`
	Confirmations uint32 `json:"confirmations"`
	Address       string `json:"address,omitempty"`
	Path          string `json:"path,omitempty"`
	LockTime      uint32 `json:"lockTime,omitempty"`
	Coinbase      bool   `json:"coinbase,omitempty"`
}

// detailLevel is Blockbook's AccountDetails, in its order.
type detailLevel int

const (
	detailsBasic detailLevel = iota
	detailsTokens
	detailsTokenBalances
	detailsTxids
	detailsTxs
)

func parseDetails(v string) detailLevel {
	switch v {
	case "basic":
		return detailsBasic
	case "tokens":
		return detailsTokens
	case "tokenBalances":
		return detailsTokenBalances
	case "txs", "txslight":
		return detailsTxs
	}
	return detailsTxids
}

// accountQuery is the query of an address or xpub request, read as
// Blockbook reads it: a value that does not parse takes its default, and a
// pageSize over 1000 (or under 1) is 1000.
type accountQuery struct {
	page, pageSize int
	from, to       uint32
	details        detailLevel
	tokens         string // xpub: nonzero (default), used, derived
	gap            int
}

func readAccountQuery(q url.Values) accountQuery {
	atoi := func(name string) int {
		n, err := strconv.Atoi(q.Get(name))
		if err != nil {
			return 0
		}
		return n
	}
	aq := accountQuery{page: atoi("page"), pageSize: atoi("pageSize"), details: parseDetails(q.Get("details")),
		tokens: q.Get("tokens"), gap: atoi("gap")}
	if aq.pageSize > txsInAPI || aq.pageSize < 1 {
		aq.pageSize = txsInAPI
	}
	if from := atoi("from"); from > 0 {
		aq.from = uint32(from)
	}
	if to := atoi("to"); to > 0 {
		aq.to = uint32(to)
	}
	return aq
}

// networkParams is the store's network's address encodings; mainnet's for
// a network chain does not know (a store of another Bitcoin-family chain).
func networkParams(network string) *chaincfg.Params {
	if params, err := chain.NetworkParams(network); err == nil {
		return params
	}
	return &chaincfg.MainNetParams
}

// addrDesc turns the path parameter into an address descriptor: an address
// of the store's network in one of its forms (index.Addresses: for Bitcoin
// Cash, cashaddr or legacy), or an output script in hex (a pay-to-pubkey
// script names its key's pay-to-pubkey-hash descriptor, index.AddrDesc).
func (a *API) addrDesc(param string) ([]byte, bool) {
	if desc, err := a.addrs.Decode(param); err == nil {
		return desc, true
	}
	if len(param) > 2*index.MaxAddrDescLen {
		return nil, false // the index holds no longer descriptor
	}
	if b, err := hex.DecodeString(param); err == nil && len(b) > 0 {
		return index.AddrDesc(b), true
	}
	return nil, false
}

// addressRequest resolves an address parameter, or says why not: 404 when
// the index is off, 400 (Blockbook's status) for a malformed address.
func (a *API) addressRequest(param string) (idx AddressIndexReads, desc []byte, code int, err error) {
	if idx = a.reads.AddressIndex(); idx == nil {
		return nil, nil, http.StatusNotFound, errorf("the address index is off; start serve with --index")
	}
	desc, ok := a.addrDesc(param)
	if !ok {
		return nil, nil, http.StatusBadRequest, errorf("Invalid address, %s is neither a %s address nor an output script in hex", echoed(param), a.opts.Network)
	}
	return idx, desc, http.StatusOK, nil
}

func (a *API) handleAddress(w http.ResponseWriter, r *http.Request) {
	out, code, err := a.address(r.Context(), r.PathValue("address"), readAccountQuery(r.URL.Query()))
	writeOutcome(w, out, code, err)
}

// address is Blockbook's GetAddress.
func (a *API) address(ctx context.Context, param string, q accountQuery) (*addressJSON, int, error) {
	ctx = withLastBlock(ctx) // a page of transactions reads each block once
	idx, desc, code, err := a.addressRequest(param)
	if err != nil {
		return nil, code, err
	}
	bal, err := idx.Balance(desc)
	if err != nil {
		return nil, http.StatusInternalServerError, errorf("reading the balance of %s: %v", echoed(param), err)
	}
	pending, err := a.mempoolOf(ctx, desc)
	if err != nil {
		return nil, http.StatusInternalServerError, errorf("reading the unmined transactions of %s: %v", echoed(param), err)
	}
	out := &addressJSON{Address: param, Balance: strconv.FormatUint(bal.Balance, 10),
		TotalReceived: strconv.FormatUint(bal.Received(), 10), TotalSent: strconv.FormatUint(bal.Sent, 10),
		Txs: int(bal.Txs), UnconfirmedTxs: len(pending)}
	var unconfirmed int64
	for _, p := range pending {
		unconfirmed += p.delta
	}
	out.UnconfirmedBalance = sats(unconfirmed)
	if q.details < detailsTxids {
		return out, http.StatusOK, nil
	}
	all, err := idx.History(ctx, desc, 1, 1, q.from, q.to)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	pg, _, _ := computePaging(all.Total, max(q.page-1, 0), q.pageSize)
	out.Page, out.TotalPages, out.ItemsOnPage = pg.Page, pg.TotalPages, pg.ItemsOnPage
	var ids []chainhash.Hash
	if pg.Page == 1 && q.to == 0 {
		for _, p := range pending { // Blockbook lists the mempool first, on the first page
			ids = append(ids, p.txid)
		}
	}
	hist, err := idx.History(ctx, desc, pg.Page, q.pageSize, q.from, q.to)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	for _, h := range hist.Txs {
		ids = append(ids, h.TxID)
	}
	for _, id := range ids {
		if q.details == detailsTxids {
			out.Txids = append(out.Txids, id.String())
			continue
		}
		tx, code, err := a.txByID(ctx, id, false)
		if err != nil {
			return nil, code, err
		}
		out.Transactions = append(out.Transactions, tx)
	}
	return out, http.StatusOK, nil
}

func (a *API) handleUtxo(w http.ResponseWriter, r *http.Request) {
	confirmedOnly := false
	if c := r.URL.Query().Get("confirmed"); c != "" {
		var err error
		if confirmedOnly, err = strconv.ParseBool(c); err != nil {
			httpreply.Error(w, http.StatusBadRequest, "Parameter 'confirmed' cannot be converted to boolean")
			return
		}
	}
	param := r.PathValue("address")
	work := a.newWork(r.Context())
	var out []utxoJSON
	code, err := http.StatusOK, error(nil)
	if isXpub(param) {
		out, code, err = a.xpubUtxos(work, param, confirmedOnly, readAccountQuery(r.URL.Query()).gap)
	} else {
		out, code, err = a.addressUtxos(work, param, confirmedOnly)
	}
	writeOutcome(w, out, code, err)
}

// addressUtxos is Blockbook's GetAddressUtxo: the outputs unmined
// transactions pay to the address (confirmations 0) first, then the
// confirmed ones newest first, without those unmined transactions spend;
// confirmedOnly leaves the store's unmined transactions out altogether.
func (a *API) addressUtxos(work *requestWork, param string, confirmedOnly bool) ([]utxoJSON, int, error) {
	ctx := work.ctx
	idx, desc, code, err := a.addressRequest(param)
	if err != nil {
		return nil, code, err
	}
	utxos, err := idx.UTXOs(desc)
	if err != nil {
		return nil, http.StatusInternalServerError, errorf("reading the UTXOs of %s: %v", echoed(param), err)
	}
	if err := work.take(len(utxos)); err != nil {
		return nil, http.StatusBadRequest, err
	}
	out := make([]utxoJSON, 0, len(utxos))
	spent := map[wire.OutPoint]bool{}
	if !confirmedOnly {
		pending, err := a.mempoolOf(ctx, desc)
		if err != nil {
			return nil, http.StatusInternalServerError, err
		}
		for _, p := range pending {
			for _, op := range p.spends {
				spent[op] = true
			}
		}
		for _, p := range pending {
			for _, o := range p.outputs {
				if !spent[wire.OutPoint{Hash: p.txid, Index: o.vout}] {
					out = append(out, utxoJSON{Txid: p.txid.String(), Vout: o.vout, Value: strconv.FormatUint(o.value, 10), LockTime: p.lockTime})
				}
			}
		}
	}
	best, _, err := idx.BestBlock()
	if err != nil {
		return nil, http.StatusInternalServerError, errorf("reading the index tip: %v", err)
	}
	for i := len(utxos) - 1; i >= 0; i-- {
		if err := work.stopped(); err != nil {
			return nil, http.StatusInternalServerError, err
		}
		u := utxos[i]
		if spent[wire.OutPoint{Hash: u.TxID, Index: u.Vout}] {
			continue
		}
		ta, ok, err := idx.TxAddresses(u.TxID)
		if err != nil {
			return nil, http.StatusInternalServerError, errorf("reading transaction %s in the index: %v", u.TxID, err)
		}
		// Blockbook's test: one input with no address and no value.
		coinbase := ok && len(ta.Inputs) == 1 && len(ta.Inputs[0].AddrDesc) == 0 && ta.Inputs[0].Value == 0
		out = append(out, utxoJSON{Txid: u.TxID.String(), Vout: u.Vout, Value: strconv.FormatUint(u.Value, 10),
			Height: u.Height, Confirmations: best.Height - u.Height + 1, Coinbase: coinbase})
	}
	return out, http.StatusOK, nil
}

// pendingTx is an unmined transaction of the store as it touches one
// address: the outputs it pays to it, the outputs of it it spends, and the
// net change to the balance.
type pendingTx struct {
	txid     chainhash.Hash
	lockTime uint32
	outputs  []pendingOutput
	spends   []wire.OutPoint
	delta    int64
}

type pendingOutput struct {
	vout  uint32
	value uint64
}

// mempoolOf finds the store's unmined transactions that pay to or spend
// from addrDesc, oldest first, from the mempool's view.
func (a *API) mempoolOf(ctx context.Context, addrDesc []byte) ([]pendingTx, error) {
	v, err := a.mempool(ctx)
	if err != nil {
		return nil, err
	}
	out := append([]pendingTx(nil), v.byAddr[string(addrDesc)]...)
	// A spend the store took without the spending transaction (Spend
	// alone) shows only on the spent outputs.
	byRecord, err := a.spentUnconfirmed(ctx, addrDesc)
	if err != nil {
		return nil, err
	}
	for _, p := range byRecord {
		if _, seen := v.touched[p.txid]; !seen {
			out = append(out, p)
		}
	}
	return out, nil
}

// spentUnconfirmed finds the address's confirmed outputs that the store
// records as spent by a transaction the index does not hold (no block has
// it yet), grouped by spender. An output the store no longer holds counts
// as unspent: the index is the authority on confirmed state.
func (a *API) spentUnconfirmed(ctx context.Context, addrDesc []byte) ([]pendingTx, error) {
	idx := a.reads.AddressIndex()
	utxos, err := idx.UTXOs(addrDesc)
	if err != nil || len(utxos) == 0 {
		return nil, err
	}
	var items []*utxo.UnresolvedMetaData
	seen := map[chainhash.Hash]bool{}
	for _, u := range utxos {
		if !seen[u.TxID] {
			seen[u.TxID] = true
			items = append(items, &utxo.UnresolvedMetaData{TxID: u.TxID})
		}
	}
	if err := a.reads.BatchDecorate(ctx, items, utxo.FieldOutputs); err != nil {
		return nil, err
	}
	outputs := map[chainhash.Hash][]utxo.OutputState{}
	for _, it := range items {
		if it.Err == nil && it.Meta != nil {
			outputs[it.TxID] = it.Meta.Outputs
		}
	}
	bySpender := map[chainhash.Hash]*pendingTx{}
	var order []chainhash.Hash
	for _, u := range utxos {
		outs := outputs[u.TxID]
		if int(u.Vout) >= len(outs) || outs[u.Vout].SpendingData == nil {
			continue
		}
		by := outs[u.Vout].SpendingData.TxID
		if _, mined, err := idx.TxAddresses(by); err != nil || mined {
			if err != nil {
				return nil, err
			}
			continue
		}
		p := bySpender[by]
		if p == nil {
			p = &pendingTx{txid: by}
			bySpender[by] = p
			order = append(order, by)
		}
		p.spends = append(p.spends, wire.OutPoint{Hash: u.TxID, Index: u.Vout})
		p.delta -= int64(u.Value)
	}
	out := make([]pendingTx, 0, len(order))
	for _, id := range order {
		out = append(out, *bySpender[id])
	}
	return out, nil
}
