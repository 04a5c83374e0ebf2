package blockbook

import (
	"net/http"
	"sort"
	"strconv"

	"github.com/utxostore/utxostore/internal/httpreply"
)

// balanceHistoryJSON is Blockbook v0.3.4's api.BalanceHistory (no fiat
// rates: the store keeps none).
type balanceHistoryJSON struct {
	Time       uint32 `json:"time"`
	Txs        uint32 `json:"txs"`
	Received   string `json:"received"`
	Sent       string `json:"sent"`
	SentToSelf string `json:"sentToSelf"`
}

func (a *API) handleBalanceHistory(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var from, to int64
	var err error
	if v := q.Get("from"); v != "" {
		if from, err = strconv.ParseInt(v, 10, 64); err != nil {
			httpreply.Error(w, http.StatusBadRequest, "Parameter 'from' is not a unix timestamp")
			return
		}
	}
	if v := q.Get("to"); v != "" {
		if to, err = strconv.ParseInt(v, 10, 64); err != nil {
			httpreply.Error(w, http.StatusBadRequest, "Parameter 'to' is not a unix timestamp")
			return
		}
	}
	groupBy, err := strconv.ParseUint(q.Get("groupBy"), 10, 32)
	if err != nil || groupBy == 0 {
		groupBy = 3600
	}
	gap, _ := strconv.Atoi(q.Get("gap"))
	out, code, err := a.balanceHistory(a.newWork(r.Context()), r.PathValue("address"), from, to, uint32(groupBy), gap)
	writeOutcome(w, out, code, err)
}

// balanceHistory is Blockbook's GetBalanceHistory (and GetXpubBalanceHistory
// for an xpub): per groupBy seconds of block time, the transactions and
// what they paid to, spent from and sent back to the address (or the
// xpub's addresses), for blocks with a time in [from, to] (0: open).
func (a *API) balanceHistory(work *requestWork, param string, from, to int64, groupBy uint32, gap int) ([]balanceHistoryJSON, int, error) {
	idx := a.reads.AddressIndex()
	if idx == nil {
		return nil, http.StatusNotFound, errorf("the address index is off; start serve with --index")
	}
	own := map[string]bool{}
	if isXpub(param) {
		addrs, err := a.deriveXpub(work, param, gap)
		if err != nil {
			return nil, http.StatusBadRequest, err
		}
		for _, xa := range addrs {
			if xa.txs > 0 {
				own[string(xa.addrDesc)] = true
			}
		}
	} else {
		_, desc, code, err := a.addressRequest(param)
		if err != nil {
			return nil, code, err
		}
		own[string(desc)] = true
	}
	var txs historyTxs
	for desc := range own {
		// One more than the request may gather: the walk keeps no more
		// than that, and one more says the limit is passed.
		hist, err := idx.History(work.ctx, []byte(desc), 1, work.left+1, 0, 0)
		if err != nil {
			return nil, http.StatusInternalServerError, err
		}
		if err := work.take(len(hist.Txs)); err != nil {
			return nil, http.StatusBadRequest, err
		}
		txs.add(hist)
	}
	groups := map[uint32]*struct{ txs, received, sent, self uint64 }{}
	for _, t := range txs.list {
		if err := work.stopped(); err != nil {
			return nil, http.StatusInternalServerError, err
		}
		bi, ok, err := idx.BlockInfo(t.height)
		if err != nil || !ok {
			return nil, http.StatusInternalServerError, errorf("block %d of tx %s: %v", t.height, t.id, err)
		}
		if (from > 0 && int64(bi.Time) < from) || (to > 0 && int64(bi.Time) > to) {
			continue
		}
		ta, ok, err := idx.TxAddresses(t.id)
		if err != nil || !ok {
			return nil, http.StatusInternalServerError, errorf("tx %s: %v", t.id, err)
		}
		at := bi.Time / groupBy * groupBy
		g := groups[at]
		if g == nil {
			g = &struct{ txs, received, sent, self uint64 }{}
			groups[at] = g
		}
		g.txs++
		ownInput := false
		for _, in := range ta.Inputs {
			if own[string(in.AddrDesc)] {
				g.sent += in.Value
				ownInput = true
			}
		}
		for _, o := range ta.Outputs {
			if own[string(o.AddrDesc)] {
				g.received += o.Value
				if ownInput {
					g.self += o.Value
				}
			}
		}
	}
	out := make([]balanceHistoryJSON, 0, len(groups))
	for at, g := range groups {
		out = append(out, balanceHistoryJSON{Time: at, Txs: uint32(g.txs), Received: strconv.FormatUint(g.received, 10),
			Sent: strconv.FormatUint(g.sent, 10), SentToSelf: strconv.FormatUint(g.self, 10)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Time < out[j].Time })
	return out, http.StatusOK, nil
}
