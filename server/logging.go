package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/utxostore/utxostore/blockbook"
	"github.com/utxostore/utxostore/internal/httpreply"
)

// serverFaults are the gRPC codes that say the daemon failed rather than
// the caller: those gRPC's HTTP mapping answers with a 5xx.
var serverFaults = map[codes.Code]bool{codes.Internal: true, codes.Unknown: true, codes.DataLoss: true, codes.Unavailable: true}

// logUnaryFaults and logStreamFaults log every call answered with a server
// fault, naming the gRPC method.
func (s *Server) logUnaryFaults(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	s.logRPCFault(info.FullMethod, err)
	return resp, err
}

func (s *Server) logStreamFaults(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	err := handler(srv, ss)
	s.logRPCFault(info.FullMethod, err)
	return err
}

func (s *Server) logRPCFault(method string, err error) {
	if err == nil {
		return
	}
	st := status.Convert(err)
	switch {
	case errors.Is(err, errNoNode):
		s.log.Debug("answered without a node", "grpc_method", method, "code", st.Code().String())
	case serverFaults[st.Code()]:
		s.log.Error("answered a server error", "grpc_method", method, "code", st.Code().String(), "error", st.Message())
	}
}

// logHTTPFaults logs every request answered with a 5xx, naming its method
// and route (the pattern that matched, not the path, so that a route's
// failures read alike) and the error the answer carries; a 5xx its
// handler marked as the daemon's configuration
// (httpreply.MarkConfigured) is logged at debug level only.
func (s *Server) logHTTPFaults(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &faultRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.code < 500 {
			return
		}
		route := r.Pattern
		if route == "" {
			route = r.URL.Path
		}
		if blockbook.HasPrivateKey(route) {
			route = "(a path holding a private key, not shown)"
		}
		level := slog.LevelError
		if httpreply.Configured(r) {
			level = slog.LevelDebug
		}
		msg := rec.message()
		if blockbook.HasPrivateKey(msg) {
			msg = "(an answer holding a private key, not shown)"
		}
		s.log.Log(r.Context(), level, "answered a server error", "method", r.Method, "route", route, "status", rec.code, "error", msg)
	})
}

// faultBodyMax is how much of a 5xx answer's body the log keeps: the
// error message, in the API's {"error": ...} shape.
const faultBodyMax = 1 << 10

// faultRecorder notes the status of an answer and, for a 5xx, the start
// of its body. It passes Flush and Hijack through, so streaming answers and
// websocket upgrades work behind it.
type faultRecorder struct {
	http.ResponseWriter
	code int
	body []byte
}

func (f *faultRecorder) WriteHeader(code int) {
	if f.code == 0 {
		f.code = code
	}
	f.ResponseWriter.WriteHeader(code)
}

func (f *faultRecorder) Write(p []byte) (int, error) {
	if f.code == 0 {
		f.code = http.StatusOK
	}
	if f.code >= 500 && len(f.body) < faultBodyMax {
		f.body = append(f.body, p[:min(len(p), faultBodyMax-len(f.body))]...)
	}
	return f.ResponseWriter.Write(p)
}

// message is the error of the answer's {"error": ...} body, or the body
// itself when it has another shape.
func (f *faultRecorder) message() string {
	var answer struct{ Error string }
	if json.Unmarshal(f.body, &answer) == nil && answer.Error != "" {
		return answer.Error
	}
	return strings.TrimSpace(string(f.body))
}

func (f *faultRecorder) Unwrap() http.ResponseWriter { return f.ResponseWriter }

func (f *faultRecorder) Flush() { _ = http.NewResponseController(f.ResponseWriter).Flush() }

func (f *faultRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(f.ResponseWriter).Hijack()
}
