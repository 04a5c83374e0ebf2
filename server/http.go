package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// routes is the HTTP API: Blockbook v0.3.4's REST and websocket API,
// the store's own status, metrics and health.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	// Blockbook v0.3.4's API (server/public.go), under /api/v2/ and /api/.
	for _, prefix := range []string{"/api/v2/", "/api/"} {
		mux.HandleFunc("GET "+prefix+"block-index/{height}", s.handleBlockIndex)
		mux.HandleFunc("GET "+prefix+"tx/{txid}", s.handleTx)
		mux.HandleFunc("GET "+prefix+"tx-specific/{txid}", s.handleTxSpecific)
		mux.HandleFunc("GET "+prefix+"block/{height}", s.handleBlock)
		mux.HandleFunc("GET "+prefix+"address/{address}", s.handleAddress)
		mux.HandleFunc("GET "+prefix+"xpub/{xpub}", s.handleXpub)
		mux.HandleFunc("GET "+prefix+"utxo/{address}", s.handleUtxo)
		mux.HandleFunc("GET "+prefix+"balancehistory/{address}", s.handleBalanceHistory)
		mux.HandleFunc("GET "+prefix+"estimatefee/{blocks}", s.handleEstimateFee)
		mux.HandleFunc("GET "+prefix+"sendtx/{hex}", s.handleSendTx)
		mux.HandleFunc("POST "+prefix+"sendtx/", s.handleSendTx)
	}
	mux.HandleFunc("GET /api/v2", s.handleStatus)
	mux.HandleFunc("GET /api/v2/{$}", s.handleStatus)
	mux.HandleFunc("GET /api/status", s.handleStatus)
	mux.HandleFunc("GET /api", s.handleStatus) // Blockbook's own path for the status page
	mux.HandleFunc("GET /api/{$}", s.handleStatus)
	mux.HandleFunc("GET /websocket", s.handleWebsocket)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /health/live", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "live"})
	})
	mux.HandleFunc("GET /health/ready", s.handleReady)
	if AddressRoutes != nil {
		AddressRoutes(mux)
	}
	return s.logHTTPFaults(s.requireToken(limitBody(s.opts.MaxBody, mux)))
}

// requireToken answers 401 to a request without the bearer token, when one
// is configured, before its body is read. /health/* stays open for probes;
// --http-public opens everything else too.
func (s *Server) requireToken(next http.Handler) http.Handler {
	if s.opts.Token == "" || s.opts.HTTPPublic {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/health/") && !tokenOK(r.Header.Get("Authorization"), s.opts.Token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="utxostore"`)
			writeError(w, http.StatusUnauthorized, "%s needs an \"Authorization: Bearer <token>\" header (the server's --token; --http-public serves the API without it)", r.URL.Path)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// AddressRoutes is the hook for the address index's HTTP endpoints: set it
// before New to register more handlers on the API's mux.
var AddressRoutes func(mux *http.ServeMux)

// limitBody refuses a request body over max with 413 before any handler
// runs: the body is read here, within the limit, and handed on.
func limitBody(max int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			writeError(w, http.StatusRequestEntityTooLarge, "request body of %d bytes is over the limit of %d (--max-body)", r.ContentLength, max)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeError(w, http.StatusRequestEntityTooLarge, "request body is over the limit of %d bytes (--max-body)", max)
				return
			}
			writeError(w, http.StatusBadRequest, "reading the request body: %v", err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body)) // sendtx reads it
		next.ServeHTTP(w, r)
	})
}

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	if err := s.backend.Health(r.Context()); err != nil {
		writeError(w, http.StatusServiceUnavailable, "store not ready: %v", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// writeError answers in Blockbook's error shape: {"error": "..."}.
func writeError(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, map[string]string{"error": sprintf(format, args...)})
}

// writeOutcome answers with what a Blockbook call returned: its error with
// the status code it chose, or out as JSON.
func writeOutcome(w http.ResponseWriter, out any, code int, err error) {
	if err != nil {
		writeError(w, code, "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
