package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

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
	s.healthHandlers(mux)
	return s.requestContext(s.logHTTPFaults(s.perConnection(s.requireToken(limitBody(s.opts.MaxBody, mux)))))
}

// healthRoutes is the health listener's (--health): the probes alone.
func (s *Server) healthRoutes() http.Handler {
	mux := http.NewServeMux()
	s.healthHandlers(mux)
	return s.requestContext(s.logHTTPFaults(mux))
}

func (s *Server) healthHandlers(mux *http.ServeMux) {
	mux.HandleFunc("GET /health/live", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "live"})
	})
	mux.HandleFunc("GET /health/ready", s.handleReady)
}

// connState is what the daemon keeps of one HTTP connection.
type connState struct {
	conn     *limitedConn // nil when not from a limitListener
	requests atomic.Int64
}

type connStateKey struct{}

// withConnState is the HTTP server's ConnContext: each connection's
// requests share its connState.
func withConnState(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connStateKey{}, &connState{conn: limitedConnOf(c)})
}

func connStateOf(r *http.Request) *connState {
	cs, _ := r.Context().Value(connStateKey{}).(*connState)
	return cs
}

// perConnection closes a connection after its --max-conn-requests'th
// answer: a client that pipelines requests and never reads the answers
// leaves at most that many unread, and its slot goes to the next client.
func (s *Server) perConnection(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cs := connStateOf(r); cs != nil && cs.requests.Add(1) >= int64(s.opts.MaxConnRequests) {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

// requestContext gives a request the context the handlers below it share
// (the one request they all see, so that the route the mux matches shows
// in logHTTPFaults): an answerNote, and an end to its work at
// --http-write-timeout; the handlers' walks stop on it, as they do when
// the client leaves. The answer then, a 503, has writeGrace more to be
// written. A websocket outlives any one request and has no such end.
func (s *Server) requestContext(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := context.WithValue(r.Context(), answerNoteKey{}, new(answerNote))
		if r.URL.Path != "/websocket" {
			end := time.Now().Add(s.opts.HTTPWriteTimeout)
			_ = http.NewResponseController(w).SetWriteDeadline(end.Add(writeGrace))
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, end)
			defer cancel()
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// writeGrace is the time an answer has to be written after its request's
// work ran out of time.
const writeGrace = time.Second

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
// the status code it chose (outcomeCode), or out as JSON.
func writeOutcome(w http.ResponseWriter, out any, code int, err error) {
	if err != nil {
		writeError(w, outcomeCode(code, err), "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// statusClientClosedRequest answers a request whose client left before
// its answer (nginx's 499); nobody reads it, and it is no server fault.
const statusClientClosedRequest = 499

// outcomeCode is the status of a call's error: 400 for a request over one
// of the limits on one request's work, whatever the call chose; 499 when
// the client left; 503 when the request ran out of time
// (--http-write-timeout); else the call's choice.
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
