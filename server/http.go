package server

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// routes is the HTTP API: Blockbook-shaped queries, metrics and health.
//
// Address-index endpoints (/api/v2/address/{addr}, /api/v2/utxo/{addr})
// belong to package index; register them here with index.Handler once it
// exists (see AddressRoutes).
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v2/tx/{txid}", s.handleTx)
	mux.HandleFunc("GET /api/v2/block/{height}", s.handleBlock)
	mux.HandleFunc("GET /api/v2/address/{address}", s.handleAddress)
	mux.HandleFunc("GET /api/v2/utxo/{address}", s.handleUtxo)
	mux.HandleFunc("GET /api/v2/sendtx/{hex}", s.handleSendTx)
	mux.HandleFunc("GET /api/status", s.handleStatus)
	mux.HandleFunc("GET /api", s.handleStatus) // Blockbook's own path for the status page
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /health/live", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "live"})
	})
	mux.HandleFunc("GET /health/ready", s.handleReady)
	if AddressRoutes != nil {
		AddressRoutes(mux)
	}
	return limitBody(s.opts.MaxBody, mux)
}

// AddressRoutes is the hook for the address index's HTTP endpoints: set it
// before New to register more handlers on the API's mux.
var AddressRoutes func(mux *http.ServeMux)

// limitBody refuses a request body over max with 413 before any handler
// runs. The API has no writes, so the body is read and discarded here.
func limitBody(max int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			writeError(w, http.StatusRequestEntityTooLarge, "request body of %d bytes is over the limit of %d (--max-body)", r.ContentLength, max)
			return
		}
		if _, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, max)); err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeError(w, http.StatusRequestEntityTooLarge, "request body is over the limit of %d bytes (--max-body)", max)
				return
			}
			writeError(w, http.StatusBadRequest, "reading the request body: %v", err)
			return
		}
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
