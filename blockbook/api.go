// Package blockbook is Blockbook v0.3.4's HTTP and websocket API over the
// store, its address index and its block store: the routes under /api/v2
// (and /api), the status page, and /websocket. Each route's handler is in
// the file named for what it serves: address.go (address, utxo), xpub.go,
// tx.go, txspecific.go, block.go (block, block-index), balancehistory.go,
// fees.go (estimatefee, from the store's own blocks and mempool), node.go
// (sendtx), status.go and websocket.go. It reads through Reads, the narrow
// interface of the reads it makes, and changes nothing itself: sendtx
// hands the transaction to its Node.
//
// The daemon (package server) mounts it on its HTTP listener with Routes,
// behind its own listeners, token, timeouts and connection limits, and
// counts every read in its metrics.
package blockbook

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/utxostore/utxostore/feerate"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/internal/httpreply"
	"github.com/utxostore/utxostore/internal/setting"
)

// WebsocketPath is the route of Blockbook's websocket API.
const WebsocketPath = "/websocket"

// Defaults of the limits on one request's work and on the websockets.
const (
	// DefaultWSMaxAddresses is the addresses one websocket may subscribe
	// to, Blockbook's own limit (maxWebsocketSubscribeAddresses in
	// trezor/blockbook's server/websocket.go, commit a83486e).
	DefaultWSMaxAddresses = 1000
	// DefaultWSMaxAddressesTotal bounds the subscriptions of every
	// websocket together, about 15 MB of them.
	DefaultWSMaxAddressesTotal = 100_000
	// DefaultWSQueue is the requests one websocket may have unanswered or
	// their answers unread before its next are answered "too many
	// requests".
	DefaultWSQueue = 256
	// DefaultXpubGap and DefaultMaxXpubGap are Blockbook v0.3.4's default
	// and largest gap of unused addresses (defaultAddressesGap and
	// maxAddressesGap in api/xpub.go, tag v0.3.4).
	DefaultXpubGap    = 20
	DefaultMaxXpubGap = 10_000
	// DefaultMaxXpubAddresses lets both chains of an xpub reach the
	// largest gap with 10,000 used addresses besides.
	DefaultMaxXpubAddresses = 2*DefaultMaxXpubGap + 10_000
	// DefaultMaxRequestTxs bounds the transactions one API request gathers
	// from the address index: a hundred of Blockbook's 1,000-transaction
	// pages.
	DefaultMaxRequestTxs = 100_000
)

// Limits bound what one client can make the API do. A request over one
// of the limits on one request's work is refused with 400, or a websocket
// error reply, naming the limit's flag. Zero takes the default.
type Limits struct {
	// WSMaxAddresses bounds the addresses one websocket subscribes to,
	// WSMaxAddressesTotal those of every websocket together.
	WSMaxAddresses      int
	WSMaxAddressesTotal int
	// WSQueue is the requests one websocket may have unanswered or their
	// answers unread; past it its requests are answered "too many
	// requests" unworked. A client that reads nothing is disconnected once
	// its answers cannot be written, and one too slow for its pushes with
	// a close frame.
	WSQueue int
	// MaxXpubGap bounds an xpub request's gap (Blockbook's largest is the
	// default); MaxXpubAddresses the addresses one xpub request derives;
	// MaxRequestTxs the transactions one API request gathers from the
	// address index.
	MaxXpubGap       int
	MaxXpubAddresses int
	MaxRequestTxs    int
}

// Options configure the API.
type Options struct {
	Limits
	// Network is the store's network: the addresses the API reads and
	// writes, and the coin its status names.
	Network string
	// Engine is the store's engine, as the status reports it.
	Engine string
	// MaxMessage bounds a websocket message; IdleTimeout is how long a
	// websocket may send nothing (Blockbook's clients ping); RequestTimeout
	// bounds the work of one websocket request. Zero is no bound. The
	// daemon passes its --max-body, --idle-timeout and
	// --http-write-timeout, which bound its HTTP requests alike.
	MaxMessage     int64
	IdleTimeout    time.Duration
	RequestTimeout time.Duration
}

func (o Options) withDefaults() Options {
	setting.Default(&o.WSMaxAddresses, DefaultWSMaxAddresses)
	setting.Default(&o.WSMaxAddressesTotal, DefaultWSMaxAddressesTotal)
	setting.Default(&o.WSQueue, DefaultWSQueue)
	setting.Default(&o.MaxXpubGap, DefaultMaxXpubGap)
	setting.Default(&o.MaxXpubAddresses, DefaultMaxXpubAddresses)
	setting.Default(&o.MaxRequestTxs, DefaultMaxRequestTxs)
	return o
}

// API serves Blockbook's API from reads.
type API struct {
	reads Reads
	opts  Options
	// addrs are the network's address forms (cashaddr for Bitcoin Cash).
	addrs index.Addresses

	// fees estimates fee rates from the store's own data (fees.go).
	fees *feerate.Estimator

	nodeMu sync.RWMutex
	node   Node // nil when none is plugged in (SetNode)
	hub    wsHub
	pusher *mempoolPusher
	// pool keeps the view of the store's unmined transactions.
	pool mempoolCache
}

// New builds the API over reads.
func New(reads Reads, opts Options) *API {
	addrs, err := index.AddressesOf(opts.Network)
	if err != nil {
		addrs, _ = index.AddressesOf("mainnet") // a network the store's chain knows no name for
	}
	a := &API{reads: reads, opts: opts.withDefaults(), addrs: addrs, fees: feerate.New(newFeeSource(reads))}
	a.startMempoolPusher()
	return a
}

// Routes registers the API's routes on mux: Blockbook v0.3.4's REST API
// (its server/public.go) under /api/v2/ and /api/, the status page, and
// the websocket.
func (a *API) Routes(mux *http.ServeMux) {
	// Blockbook registers each call as a prefix, so its handlers also
	// take an empty argument (block-index's names the tip): each call is
	// routed with its argument and without one ({$}, which gives "").
	var calls []string // for the answer to a path that names none
	call := func(prefix, name, arg string, h http.HandlerFunc) {
		mux.Handle("GET "+prefix+name+"/{"+arg+"}", refusePrivateKeys(h))
		mux.Handle("GET "+prefix+name+"/{$}", refusePrivateKeys(h))
		if !slices.Contains(calls, name) {
			calls = append(calls, name)
		}
	}
	for _, prefix := range []string{"/api/v2/", "/api/"} {
		call(prefix, "block-index", "height", a.handleBlockIndex)
		call(prefix, "tx", "txid", a.handleTx)
		call(prefix, "tx-specific", "txid", a.handleTxSpecific)
		call(prefix, "block", "height", a.handleBlock)
		call(prefix, "address", "address", a.handleAddress)
		call(prefix, "xpub", "xpub", a.handleXpub)
		call(prefix, "utxo", "address", a.handleUtxo)
		call(prefix, "balancehistory", "address", a.handleBalanceHistory)
		call(prefix, "estimatefee", "blocks", a.handleEstimateFee)
		call(prefix, "sendtx", "hex", a.handleSendTx)
		mux.Handle("POST "+prefix+"sendtx/", refusePrivateKeys(http.HandlerFunc(a.handleSendTx)))
	}
	mux.HandleFunc("GET /api/v2", a.handleStatus)
	mux.HandleFunc("GET /api/v2/{$}", a.handleStatus)
	mux.HandleFunc("GET /api/status", a.handleStatus)
	mux.HandleFunc("GET /api", a.handleStatus) // Blockbook's own path for the status page
	mux.HandleFunc("GET /api/{$}", a.handleStatus)
	// Any other path under /api/ names no call: 404, as JSON like every
	// call's errors.
	mux.HandleFunc("GET /api/", func(w http.ResponseWriter, r *http.Request) {
		httpreply.Error(w, http.StatusNotFound, "%s names no call of this API (the calls are under /api/v2/: %s)", echoed(r.URL.Path), strings.Join(calls, ", "))
	})
	mux.HandleFunc("GET "+WebsocketPath, a.handleWebsocket)
}

// refusePrivateKeys answers 400 with PrivateKeyRefusal, and nothing of
// the request, to a request whose path or query holds an extended private
// key, before next reads it: no route takes one, and each would quote it
// back in its error.
func refusePrivateKeys(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if HasPrivateKey(r.URL.Path) || queryHasPrivateKey(r.URL.RawQuery) {
			httpreply.Error(w, http.StatusBadRequest, "%s", PrivateKeyRefusal)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// queryHasPrivateKey reports whether a raw query, its names and values
// decoded, holds a private key.
func queryHasPrivateKey(raw string) bool {
	if raw == "" {
		return false
	}
	if HasPrivateKey(raw) {
		return true
	}
	q, _ := url.ParseQuery(raw) // what parses of a malformed query
	for name, values := range q {
		if HasPrivateKey(name) {
			return true
		}
		for _, v := range values {
			if HasPrivateKey(v) {
				return true
			}
		}
	}
	return false
}

// writeOutcome answers with what a Blockbook call returned: its error with
// the status code it chose (outcomeCode), or out as JSON.
func writeOutcome(w http.ResponseWriter, out any, code int, err error) {
	if err != nil {
		httpreply.Error(w, outcomeCode(code, err), "%v", err)
		return
	}
	httpreply.JSON(w, http.StatusOK, out)
}

// statusClientClosedRequest answers a request whose client left before
// its answer (nginx's 499); nobody reads it, and it is no server fault.
const statusClientClosedRequest = 499

// outcomeCode is the status of a call's error: 400 for a request over one
// of the limits on one request's work, whatever the call chose; 499 when
// the client left; 503 when the request ran out of time (the daemon's
// --http-write-timeout); else the call's choice.
func outcomeCode(code int, err error) int {
	var over *limitError
	switch {
	case errors.As(err, &over):
		return http.StatusBadRequest
	case errors.Is(err, context.Canceled):
		return statusClientClosedRequest
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	}
	return code
}
