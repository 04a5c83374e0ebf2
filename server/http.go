package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/utxostore/utxostore/blockbook"
	"github.com/utxostore/utxostore/explorer"
	"github.com/utxostore/utxostore/internal/httpreply"
)

// routes is the HTTP listener's: Blockbook's API (package blockbook),
// the block explorer's pages over it (package explorer), and the store's
// status, metrics and health, behind the daemon's token, body and
// connection limits.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	s.bb.Routes(mux)
	explorer.New(s.bb, s.backend, s.opts.Network).Routes(mux)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.Registry, promhttp.HandlerOpts{}))
	s.healthHandlers(mux)
	return s.requestContext(s.logHTTPFaults(s.perConnection(s.requireToken(limitBody(s.opts.MaxBody, s.websocketSlots(mux))))))
}

// healthRoutes is the health listener's (--health): the probes alone.
func (s *Server) healthRoutes() http.Handler {
	mux := http.NewServeMux()
	s.healthHandlers(mux)
	return s.requestContext(s.logHTTPFaults(mux))
}

func (s *Server) healthHandlers(mux *http.ServeMux) {
	mux.HandleFunc("GET /health/live", func(w http.ResponseWriter, _ *http.Request) {
		httpreply.JSON(w, http.StatusOK, map[string]string{"status": "live"})
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
// in logHTTPFaults): a note for the fault log (httpreply.WithNote), and an
// end to its work at --http-write-timeout; the handlers' walks stop on
// it, as they do when the client leaves. The answer then, a 503, has
// writeGrace more to be written. A websocket outlives any one request and
// has no such end.
func (s *Server) requestContext(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := httpreply.WithNote(r.Context())
		if r.URL.Path != blockbook.WebsocketPath {
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

// websocketSlots counts a websocket against --max-websockets, not
// against the HTTP connections: a request for the websocket takes one of
// the websockets' slots first, or is answered 429, and holds it until its
// handler returns; when the handler takes its connection over (the
// upgrade), the connection gives its --max-conns slot back. Websockets
// cannot crowd out the API.
func (s *Server) websocketSlots(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != blockbook.WebsocketPath {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case s.websockets <- struct{}{}:
			defer func() { <-s.websockets }()
		default:
			httpreply.Error(w, http.StatusTooManyRequests, "too many websocket connections: %d are open, the limit (--max-websockets)", cap(s.websockets))
			return
		}
		next.ServeHTTP(&upgradable{ResponseWriter: w, conn: connStateOf(r)}, r)
	})
}

// upgradable is the answer to a websocket request: taking the connection
// over (Hijack) gives its slot among the HTTP connections back.
type upgradable struct {
	http.ResponseWriter
	conn *connState // nil when not from a limitListener
}

func (u *upgradable) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(u.ResponseWriter).Hijack()
	if err == nil && u.conn != nil && u.conn.conn != nil {
		u.conn.conn.releaseSlot()
	}
	return c, rw, err
}

func (u *upgradable) Unwrap() http.ResponseWriter { return u.ResponseWriter }

// requireToken answers 401 to a request without the bearer token, when one
// is configured, before its body is read: the API, the explorer's pages
// and the metrics alike. /health/* stays open for probes; --http-public
// opens everything else too.
func (s *Server) requireToken(next http.Handler) http.Handler {
	if s.opts.Token == "" || s.opts.HTTPPublic {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/health/") && !tokenOK(r.Header.Get("Authorization"), s.opts.Token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="utxostore"`)
			path := r.URL.Path
			if blockbook.HasPrivateKey(path) {
				path = "this path (it holds a private key, not shown: never paste one anywhere)"
			}
			httpreply.Error(w, http.StatusUnauthorized, "%s needs an \"Authorization: Bearer <token>\" header (the server's --token; --http-public serves the API and the explorer without it)", path)
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
			httpreply.Error(w, http.StatusRequestEntityTooLarge, "request body of %d bytes is over the limit of %d (--max-body)", r.ContentLength, max)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				httpreply.Error(w, http.StatusRequestEntityTooLarge, "request body is over the limit of %d bytes (--max-body)", max)
				return
			}
			httpreply.Error(w, http.StatusBadRequest, "reading the request body: %v", err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body)) // sendtx reads it
		next.ServeHTTP(w, r)
	})
}

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	if err := s.backend.Health(r.Context()); err != nil {
		httpreply.Error(w, http.StatusServiceUnavailable, "store not ready: %v", err)
		return
	}
	httpreply.JSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
