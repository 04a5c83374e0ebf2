package blockbook

import (
	"bytes"
	"encoding/hex"
	"net/http"
	"sort"
	"strconv"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/txscript"

	"github.com/utxostore/utxostore/index"
)

// token is Blockbook v0.3.4's api.Token as an xpub's address: there are no
// tokens for Bitcoin, only the derived addresses under type XPUBAddress.
type token struct {
	Type          string `json:"type"`
	Name          string `json:"name"`
	Path          string `json:"path,omitempty"`
	Transfers     int    `json:"transfers"`
	Decimals      int    `json:"decimals,omitempty"`
	Balance       string `json:"balance,omitempty"`
	TotalReceived string `json:"totalReceived,omitempty"`
	TotalSent     string `json:"totalSent,omitempty"`
}

// Extended public key versions (SLIP-132) and the scripts their addresses
// use, as Blockbook derives them for BIP44, BIP49 and BIP84.
var (
	versionXpub = []byte{0x04, 0x88, 0xb2, 0x1e} // P2PKH, m/44'
	versionYpub = []byte{0x04, 0x9d, 0x7c, 0xb2} // P2SH-P2WPKH, m/49'
	versionZpub = []byte{0x04, 0xb2, 0x47, 0x46} // P2WPKH, m/84'
	versionTpub = []byte{0x04, 0x35, 0x87, 0xcf}
	versionUpub = []byte{0x04, 0x4a, 0x52, 0x62}
	versionVpub = []byte{0x04, 0x5f, 0x1c, 0xf6}
)

// isXpub reports whether param is an extended public key.
func isXpub(param string) bool {
	k, err := hdkeychain.NewKeyFromString(param)
	return err == nil && !k.IsPrivate()
}

// xpubAddress is one derived address.
type xpubAddress struct {
	addr     string
	addrDesc []byte
	path     string
	txs      uint32
	balance  uint64
	received uint64
	sent     uint64
}

// deriveXpub derives the receive (0) and change (1) chains of an account
// key until gap unused addresses in a row, as Blockbook does: gap 0 (or
// less) is Blockbook's default, 20. A gap over --max-xpub-gap, and a key
// whose chains need more than --max-xpub-addresses addresses, are refused
// (Blockbook takes its largest gap for a larger one).
func (a *API) deriveXpub(work *requestWork, param string, gap int) ([]xpubAddress, error) {
	key, err := hdkeychain.NewKeyFromString(param)
	if err != nil || key.IsPrivate() {
		return nil, errorf("Invalid xpub %s", echoed(param))
	}
	if gap <= 0 {
		gap = DefaultXpubGap
	}
	if gap > a.opts.MaxXpubGap {
		return nil, overLimit("gap %d is over the largest gap of %d (--max-xpub-gap)", gap, a.opts.MaxXpubGap)
	}
	purpose := "44"
	switch v := key.Version(); {
	case bytes.Equal(v, versionYpub), bytes.Equal(v, versionUpub):
		purpose = "49"
	case bytes.Equal(v, versionZpub), bytes.Equal(v, versionVpub):
		purpose = "84"
	case bytes.Equal(v, versionXpub), bytes.Equal(v, versionTpub):
	default:
		return nil, errorf("Invalid xpub %s: unknown version %x", echoed(param), v)
	}
	base := a.derivationBase(key, purpose)
	params := networkParams(a.opts.Network)
	idx := a.reads.AddressIndex()
	var out []xpubAddress
	for change := uint32(0); change < 2; change++ {
		chain, err := key.Derive(change)
		if err != nil {
			return nil, err
		}
		unused := 0
		for i := uint32(0); unused < gap; i++ {
			if len(out) == a.opts.MaxXpubAddresses {
				return nil, overLimit("the xpub needs more than %d addresses, the most one request derives (--max-xpub-addresses); a smaller gap needs fewer", a.opts.MaxXpubAddresses)
			}
			if err := work.stopped(); err != nil {
				return nil, err
			}
			child, err := chain.Derive(i)
			if err != nil {
				return nil, err
			}
			pub, err := child.ECPubKey()
			if err != nil {
				return nil, err
			}
			hash := btcutil.Hash160(pub.SerializeCompressed())
			var addr btcutil.Address
			switch purpose {
			case "84":
				addr, err = btcutil.NewAddressWitnessPubKeyHash(hash, params)
			case "49":
				var redeem []byte
				redeem, err = txscript.NewScriptBuilder().AddOp(txscript.OP_0).AddData(hash).Script()
				if err == nil {
					addr, err = btcutil.NewAddressScriptHash(redeem, params)
				}
			default:
				addr, err = btcutil.NewAddressPubKeyHash(hash, params)
			}
			if err != nil {
				return nil, err
			}
			script, err := txscript.PayToAddrScript(addr)
			if err != nil {
				return nil, err
			}
			bal, err := idx.Balance(script)
			if err != nil {
				return nil, err
			}
			xa := xpubAddress{addr: a.addrs.EncodeAddress(addr), addrDesc: script, txs: bal.Txs, balance: bal.Balance,
				received: bal.Received(), sent: bal.Sent,
				path: base + "/" + strconv.Itoa(int(change)) + "/" + strconv.Itoa(int(i))}
			if xa.txs == 0 {
				unused++
			} else {
				unused = 0
			}
			out = append(out, xa)
		}
	}
	return out, nil
}

// derivationBase is Blockbook's DerivationBasePath: m/purpose'/coin'/account'
// for an account key (depth 3), else "unknown/<child>".
func (a *API) derivationBase(key *hdkeychain.ExtendedKey, purpose string) string {
	cn := key.ChildIndex()
	c := ""
	if cn >= hdkeychain.HardenedKeyStart {
		cn -= hdkeychain.HardenedKeyStart
		c = "'"
	}
	c = strconv.Itoa(int(cn)) + c
	if key.Depth() != 3 {
		return "unknown/" + c
	}
	coin := "0"
	if a.opts.Network != "mainnet" && a.opts.Network != "" {
		coin = "1"
	}
	return "m/" + purpose + "'/" + coin + "'/" + c
}

func (a *API) handleXpub(w http.ResponseWriter, r *http.Request) {
	q := readAccountQuery(r.URL.Query())
	out, code, err := a.xpub(a.newWork(r.Context()), r.PathValue("xpub"), q)
	writeOutcome(w, out, code, err)
}

// xpub is Blockbook's GetXpubAddress: the account's totals, its derived
// addresses as tokens (nonzero balance by default; used; or every derived
// one) and its transactions, newest first.
func (a *API) xpub(work *requestWork, param string, q accountQuery) (*addressJSON, int, error) {
	ctx := withLastBlock(work.ctx) // a page of transactions reads each block once
	if a.reads.AddressIndex() == nil {
		return nil, http.StatusNotFound, errorf("the address index is off; start serve with --index")
	}
	addrs, err := a.deriveXpub(work, param, q.gap)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	out := &addressJSON{Address: param}
	var balance, received, sent uint64
	var unconfirmed int64
	pendingIDs := map[chainhash.Hash]bool{}
	var history historyTxs
	for _, xa := range addrs {
		if err := work.stopped(); err != nil {
			return nil, http.StatusInternalServerError, err
		}
		balance, received, sent = balance+xa.balance, received+xa.received, sent+xa.sent
		if xa.txs > 0 {
			out.UsedTokens++
			pending, err := a.mempoolOf(ctx, xa.addrDesc)
			if err != nil {
				return nil, http.StatusInternalServerError, err
			}
			for _, p := range pending {
				unconfirmed += p.delta
				pendingIDs[p.txid] = true
			}
			if err := work.take(int(xa.txs)); err != nil {
				return nil, http.StatusBadRequest, err
			}
			hist, err := a.reads.AddressIndex().History(ctx, xa.addrDesc, 1, int(xa.txs)+1, q.from, q.to)
			if err != nil {
				return nil, http.StatusInternalServerError, err
			}
			history.add(hist)
		}
		include := xa.balance > 0
		switch q.tokens {
		case "used":
			include = xa.txs > 0
		case "derived":
			include = true
		}
		if include && q.details >= detailsTokens {
			t := token{Type: "XPUBAddress", Name: xa.addr, Path: xa.path, Transfers: int(xa.txs), Decimals: 8}
			if q.details >= detailsTokenBalances {
				t.Balance, t.TotalReceived, t.TotalSent = strconv.FormatUint(xa.balance, 10), strconv.FormatUint(xa.received, 10), strconv.FormatUint(xa.sent, 10)
			}
			out.Tokens = append(out.Tokens, t)
		}
	}
	out.Balance, out.TotalReceived, out.TotalSent = strconv.FormatUint(balance, 10), strconv.FormatUint(received, 10), strconv.FormatUint(sent, 10)
	txs := history.list
	out.UnconfirmedBalance, out.UnconfirmedTxs, out.Txs = sats(unconfirmed), len(pendingIDs), len(txs)
	if q.details < detailsTxids {
		return out, http.StatusOK, nil
	}
	sort.SliceStable(txs, func(i, j int) bool { return txs[i].height > txs[j].height })
	pg, from, to := computePaging(len(txs), max(q.page-1, 0), q.pageSize)
	out.Page, out.TotalPages, out.ItemsOnPage = pg.Page, pg.TotalPages, pg.ItemsOnPage
	for _, t := range txs[from:to] {
		if q.details == detailsTxids {
			out.Txids = append(out.Txids, t.id.String())
			continue
		}
		tx, code, err := a.txByID(ctx, t.id, false)
		if err != nil {
			return nil, code, err
		}
		out.Transactions = append(out.Transactions, tx)
	}
	return out, http.StatusOK, nil
}

// xpubUtxos is Blockbook's GetXpubUtxo: the UTXOs of every derived
// address, each with its address and path.
func (a *API) xpubUtxos(work *requestWork, param string, confirmedOnly bool, gap int) ([]utxoJSON, int, error) {
	if a.reads.AddressIndex() == nil {
		return nil, http.StatusNotFound, errorf("the address index is off; start serve with --index")
	}
	addrs, err := a.deriveXpub(work, param, gap)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	out := []utxoJSON{}
	for _, xa := range addrs {
		if xa.txs == 0 {
			continue
		}
		us, code, err := a.addressUtxos(work, hex.EncodeToString(xa.addrDesc), confirmedOnly)
		if err != nil {
			return nil, code, err
		}
		for _, u := range us {
			u.Address, u.Path = xa.addr, xa.path
			out = append(out, u)
		}
	}
	return out, http.StatusOK, nil
}

// historyTxs gathers the transactions of several addresses' histories,
// each once, in the order first added.
type historyTxs struct {
	seen map[chainhash.Hash]bool
	list []historyTx
}

// historyTx is a transaction of an address's history and the height of
// its block.
type historyTx struct {
	id     chainhash.Hash
	height uint32
}

func (h *historyTxs) add(hist *index.History) {
	if h.seen == nil {
		h.seen = map[chainhash.Hash]bool{}
	}
	for _, t := range hist.Txs {
		if !h.seen[t.TxID] {
			h.seen[t.TxID] = true
			h.list = append(h.list, historyTx{t.TxID, t.Height})
		}
	}
}
