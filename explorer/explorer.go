// Package explorer is the daemon's block explorer: server-rendered pages
// of the chain the store holds, at Blockbook's explorer paths. / is the
// status, the latest blocks, the mempool's size and a search box;
// /block/{height or hash}, /tx/{txid}, /address/{address} and
// /xpub/{xpub} show what Blockbook's API answers for them, with every
// output's state in the store's record model (unspent, spent and by
// whom, frozen, reassigned) and the record's own (mined in which blocks,
// locked, conflicting, deleted at a height, preserved); /mempool lists
// the unmined transactions; /search sends a query to its page.
//
// The pages are html/template's, which escapes everything they show; the
// stylesheet and the one script are embedded, and the pages read without
// the script: it only reloads a page's content when the daemon's
// websocket announces a new block. The explorer reads through the
// Blockbook API's Go answers (blockbook.API's Find methods) and the
// store's reads (blockbook.Reads), and changes nothing.
package explorer

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/utxostore/utxostore/blockbook"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo"
)

//go:embed templates static
var files embed.FS

// Page sizes: transactions of an address or xpub and of a block on one
// page, the latest blocks on the front page, and the unmined transactions
// listed.
const (
	accountPageSize = 25
	blockPageSize   = 50
	latestBlocks    = 15
	// mempoolListed bounds the unmined transactions one page lists.
	mempoolListed = 1000
)

// maxParam bounds what a path or query names: the longest name a page
// takes is an xpub (111 characters); anything much longer is refused
// before any lookup, and never echoed whole.
const maxParam = 200

// Explorer serves the pages.
type Explorer struct {
	api   *blockbook.API
	reads blockbook.Reads
	// network is the store's network; unit its coin's ticker.
	network, unit string
	pages         map[string]*template.Template
	static        http.Handler
}

// New builds the explorer over the daemon's Blockbook API and its reads,
// for a store of network.
func New(api *blockbook.API, reads blockbook.Reads, network string) *Explorer {
	e := &Explorer{api: api, reads: reads, network: network, unit: unitOf(network), pages: map[string]*template.Template{}}
	funcs := template.FuncMap{"coins": e.coins, "when": when, "short": short, "plus": func(a, b int) int { return a + b }}
	base := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/txlist.html"))
	for _, name := range []string{"home", "block", "tx", "account", "mempool", "error"} {
		e.pages[name] = template.Must(template.Must(base.Clone()).ParseFS(files, "templates/"+name+".html"))
	}
	static, _ := fs.Sub(files, "static")
	e.static = http.StripPrefix("/static/", http.FileServerFS(static))
	return e
}

// Routes registers the pages on mux.
func (e *Explorer) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", e.handleHome)
	mux.HandleFunc("GET /block/{id}", e.handleBlock)
	mux.HandleFunc("GET /tx/{txid}", e.handleTx)
	mux.HandleFunc("GET /address/{address}", e.handleAddress)
	mux.HandleFunc("GET /xpub/{xpub}", e.handleXpub)
	mux.HandleFunc("GET /mempool", e.handleMempool)
	mux.HandleFunc("GET /search", e.handleSearch)
	mux.HandleFunc("POST /search", e.handleSearch)
	mux.Handle("GET /static/", e.static)
}

// unitOf is the ticker of the network's coin.
func unitOf(network string) string {
	n, err := chain.LookupNetwork(network)
	if err != nil {
		return "BTC"
	}
	switch n.Family {
	case chain.BitcoinCash:
		return "BCH"
	case chain.BitcoinSV:
		return "BSV"
	}
	return "BTC"
}

// page is what every page's layout shows.
type page struct {
	Title   string
	Network string
	// Query is the search box's text: what the page was asked for.
	Query string
	// IndexOff says the address index is off (serve without --index).
	IndexOff bool
	Data     any
}

// render answers the page name with data.
func (e *Explorer) render(w http.ResponseWriter, code int, name, title, query string, data any) {
	var b strings.Builder
	p := page{Title: title, Network: e.network, Query: query, IndexOff: e.reads.AddressIndex() == nil, Data: data}
	if err := e.pages[name].Execute(&b, p); err != nil {
		http.Error(w, "rendering the page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	// Nothing but the explorer's own files runs or loads on its pages.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(b.String()))
}

// errorPage is what a page shows when its lookup fails.
type errorPage struct {
	Code    int
	Message string
	// NeedsIndex: the page needs the address index, which is off.
	NeedsIndex bool
}

func (e *Explorer) fail(w http.ResponseWriter, code int, query string, err error) {
	ep := errorPage{Code: code, Message: err.Error()}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		ep.Code = http.StatusServiceUnavailable
	case errors.Is(err, context.Canceled):
		return // the client left
	}
	e.render(w, ep.Code, "error", http.StatusText(ep.Code), query, ep)
}

func (e *Explorer) needsIndex(w http.ResponseWriter, query string) {
	e.render(w, http.StatusNotFound, "error", "Address index off", query, errorPage{Code: http.StatusNotFound, NeedsIndex: true,
		Message: "this page needs the address index, which this daemon does not keep"})
}

// param is a path or query value within maxParam, or an error that names
// its length rather than echoing it. A value holding an extended private
// key is refused (blockbook.ErrPrivateKey) and never shown: its page, its
// search box and its title would each show it again.
func param(v, what string) (string, error) {
	if blockbook.HasPrivateKey(v) {
		return "", blockbook.ErrPrivateKey
	}
	if len(v) > maxParam {
		return "", fmt.Errorf("a %s of %d characters is none: the longest this explorer takes has %d", what, len(v), maxParam)
	}
	return v, nil
}

// pageParam is the 1-based page of a paged list; anything else is 1.
func pageParam(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// home is the front page's data.
type home struct {
	Status  *blockbook.Status
	Blocks  []utxo.BlockInfo
	Heights []uint32
}

func (e *Explorer) handleHome(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	st, err := e.api.Status(ctx)
	if err != nil {
		e.fail(w, http.StatusInternalServerError, "", err)
		return
	}
	h := home{Status: st}
	tip, ok, err := e.reads.Tip(ctx)
	if err != nil {
		e.fail(w, http.StatusInternalServerError, "", err)
		return
	}
	for i := 0; ok && i < latestBlocks && uint32(i) <= tip.Height; i++ {
		height := tip.Height - uint32(i)
		b, found, err := e.reads.BlockAt(ctx, height)
		if err != nil {
			e.fail(w, http.StatusInternalServerError, "", err)
			return
		}
		if !found {
			break
		}
		h.Blocks, h.Heights = append(h.Blocks, b), append(h.Heights, height)
	}
	e.render(w, http.StatusOK, "home", "utxostore explorer", "", h)
}

func (e *Explorer) handleBlock(w http.ResponseWriter, r *http.Request) {
	id, err := param(r.PathValue("id"), "block height or hash")
	if err != nil {
		e.fail(w, http.StatusBadRequest, "", err)
		return
	}
	b, code, err := e.api.FindBlock(r.Context(), id, pageParam(r), blockPageSize)
	if err != nil {
		e.fail(w, code, id, err)
		return
	}
	p := blockPage{Block: b}
	if b.PreviousBlockHash != "" {
		p.Previous = blockLink(b.Height - 1)
	}
	if b.NextBlockHash != "" {
		p.Next = blockLink(b.Height + 1)
	}
	e.render(w, http.StatusOK, "block", fmt.Sprintf("Block %d", b.Height), id, p)
}

// blockPage is a block's page data.
type blockPage struct {
	*blockbook.Block
	// Previous and Next are the neighbouring blocks' links, "" at the ends.
	Previous, Next string
}

// blockLink is a block's page by its height. The pages link blocks by
// height, never by hash: without the block store (serve without --index)
// a block is found by its height only.
func blockLink(height uint32) string { return "/block/" + strconv.FormatUint(uint64(height), 10) }

func (e *Explorer) handleTx(w http.ResponseWriter, r *http.Request) {
	id, err := param(r.PathValue("txid"), "txid")
	if err != nil {
		e.fail(w, http.StatusBadRequest, "", err)
		return
	}
	txid, err := blockbook.ParseTxid(id)
	if err != nil {
		e.fail(w, http.StatusBadRequest, id, err)
		return
	}
	tx, code, err := e.api.FindTx(r.Context(), txid)
	if err != nil {
		e.fail(w, code, id, err)
		return
	}
	e.render(w, http.StatusOK, "tx", "Transaction "+short(tx.TxID), id, tx)
}

// account is an address's or xpub's page data.
type account struct {
	*blockbook.Account
	Xpub bool
	// Prev and Next are the neighbouring pages' links, "" at the ends.
	Prev, Next string
}

func (e *Explorer) handleAddress(w http.ResponseWriter, r *http.Request) {
	e.account(w, r, "address", r.PathValue("address"), e.api.FindAddress)
}

func (e *Explorer) handleXpub(w http.ResponseWriter, r *http.Request) {
	e.account(w, r, "xpub", r.PathValue("xpub"), e.api.FindXpub)
}

func (e *Explorer) account(w http.ResponseWriter, r *http.Request, kind, v string,
	find func(ctx context.Context, param string, page, pageSize int) (*blockbook.Account, int, error)) {
	name, err := param(v, kind)
	if err != nil {
		e.fail(w, http.StatusBadRequest, "", err)
		return
	}
	if e.reads.AddressIndex() == nil {
		e.needsIndex(w, name)
		return
	}
	acc, code, err := find(r.Context(), name, pageParam(r), accountPageSize)
	if err != nil {
		e.fail(w, code, name, err)
		return
	}
	a := account{Account: acc, Xpub: kind == "xpub"}
	link := func(p int) string { return "/" + kind + "/" + url.PathEscape(name) + "?page=" + strconv.Itoa(p) }
	if acc.Page > 1 {
		a.Prev = link(acc.Page - 1)
	}
	if acc.Page < acc.TotalPages {
		a.Next = link(acc.Page + 1)
	}
	title := "Address " + name
	if a.Xpub {
		title = "Xpub " + short(name)
	}
	e.render(w, http.StatusOK, "account", title, name, a)
}

// mempool is the mempool page's data: its size, and its first
// mempoolListed transactions.
type mempool struct {
	Size int
	Txs  []*utxo.UnminedTransaction
}

func (e *Explorer) handleMempool(w http.ResponseWriter, r *http.Request) {
	txs, err := e.api.Mempool(r.Context())
	if err != nil {
		e.fail(w, http.StatusInternalServerError, "", err)
		return
	}
	e.render(w, http.StatusOK, "mempool", "Mempool", "", mempool{Size: len(txs), Txs: txs[:min(len(txs), mempoolListed)]})
}

// handleSearch sends q to the page of what it names: a height to its
// block, 64 hex digits to the block of that hash when the block store
// holds one and to the transaction otherwise, an xpub to its page, and
// anything else to the address page, which says when it is none. The
// search box posts q, so that what was typed stays out of the browser's
// history and the daemon's URLs until it is found to be no private key;
// GET /search?q= works as Blockbook's does.
func (e *Explorer) handleSearch(w http.ResponseWriter, r *http.Request) {
	q, err := param(strings.TrimSpace(r.FormValue("q")), "search")
	if err != nil {
		e.fail(w, http.StatusBadRequest, "", err)
		return
	}
	if q == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, e.searchTarget(q), http.StatusSeeOther)
}

func (e *Explorer) searchTarget(q string) string {
	if _, ok := blockbook.BlockHeightParam(q); ok {
		return "/block/" + q
	}
	if txid, err := blockbook.ParseTxid(q); err == nil {
		if blocks := e.reads.BlockStore(); blocks != nil {
			if _, ok, err := blocks.HeightOf(txid); err == nil && ok {
				return "/block/" + q
			}
		}
		return "/tx/" + q
	}
	if blockbook.IsXpub(q) {
		return "/xpub/" + url.PathEscape(q)
	}
	return "/address/" + url.PathEscape(q)
}

// coins formats satoshis (a decimal string, as the API gives them) in the
// network's coin: "50 BTC", "0.0001 BTC".
func (e *Explorer) coins(sats string) string {
	if sats == "" {
		return ""
	}
	neg := strings.HasPrefix(sats, "-")
	digits := strings.TrimPrefix(sats, "-")
	for len(digits) < 9 {
		digits = "0" + digits
	}
	whole, frac := digits[:len(digits)-8], strings.TrimRight(digits[len(digits)-8:], "0")
	s := whole
	if frac != "" {
		s += "." + frac
	}
	if neg {
		s = "-" + s
	}
	return s + " " + e.unit
}

// when formats a unix time in UTC.
func when(unix int64) string {
	if unix == 0 {
		return ""
	}
	return time.Unix(unix, 0).UTC().Format("2006-01-02 15:04:05 UTC")
}

// short is a hash's first and last eight digits, for narrow columns and
// titles; the links carry the whole.
func short(h string) string {
	if len(h) <= 20 {
		return h
	}
	return h[:8] + "…" + h[len(h)-8:]
}
