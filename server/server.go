package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"golang.org/x/net/netutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	pb "github.com/utxostore/utxostore/proto/utxostorepb"
)

// Server is the running daemon: one gRPC and one HTTP listener over an
// instrumented backend.
type Server struct {
	opts    Options
	backend *Instrumented
	metrics *Metrics
	grpc    *grpc.Server
	http    *http.Server
	tls     *tls.Config

	log       *slog.Logger
	summaries summaryCache
	// bb is the Blockbook API's own state: the node hook and the
	// websocket subscribers (http_misc.go, websocket.go).
	bb blockbookState

	grpcLn, httpLn net.Listener
	serveErr       chan error
}

// New builds the daemon over backend; it listens on Start. The caller keeps
// ownership of the store and closes it after Shutdown.
func New(backend Backend, opts Options) (*Server, error) {
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Server{opts: opts, log: opts.Logger, metrics: NewMetrics(), serveErr: make(chan error, 2)}
	s.backend = NewInstrumented(backend, s.metrics, opts.ExternalAbove)
	if opts.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(opts.TLSCert, opts.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("loading the TLS certificate: %w", err)
		}
		s.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	grpcOpts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(opts.MaxMessage),
		grpc.InTapHandle(tapAuth(opts.Token)),
		grpc.StatsHandler(newInflight(opts.MaxInflightBytes, int64(opts.MaxMessage))),
		grpc.ChainUnaryInterceptor(s.logUnaryFaults),
		grpc.ChainStreamInterceptor(s.logStreamFaults),
		grpc.ConnectionTimeout(opts.HTTPHeaderTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: opts.IdleTimeout}),
	}
	if s.tls != nil {
		grpcOpts = append(grpcOpts, grpc.Creds(credentials.NewTLS(s.tls)))
	}
	s.grpc = grpc.NewServer(grpcOpts...)
	pb.RegisterUtxoStoreServer(s.grpc, &grpcService{b: s.backend, maxBatch: opts.MaxBatch, engine: opts.Engine, network: opts.Network,
		summary: s.summary, node: s.connectedNode})
	s.http = &http.Server{Handler: s.routes(), TLSConfig: s.tls,
		ReadHeaderTimeout: opts.HTTPHeaderTimeout, ReadTimeout: opts.HTTPReadTimeout, IdleTimeout: opts.IdleTimeout}
	return s, nil
}

// Metrics returns the daemon's metrics.
func (s *Server) Metrics() *Metrics { return s.metrics }

// Start binds both listeners and serves in the background.
func (s *Server) Start() error {
	var err error
	if s.grpcLn, err = net.Listen("tcp", s.opts.GRPCAddr); err != nil {
		return fmt.Errorf("gRPC listener: %w", err)
	}
	if s.httpLn, err = net.Listen("tcp", s.opts.HTTPAddr); err != nil {
		s.grpcLn.Close()
		return fmt.Errorf("HTTP listener: %w", err)
	}
	// Connections over the limit wait in the kernel's backlog until one
	// closes, so they cost the process no file descriptor.
	s.grpcLn = netutil.LimitListener(s.grpcLn, s.opts.MaxConns)
	s.httpLn = netutil.LimitListener(s.httpLn, s.opts.MaxConns)
	go func() { s.serveErr <- s.grpc.Serve(s.grpcLn) }()
	go func() {
		var err error
		if s.tls != nil {
			err = s.http.ServeTLS(s.httpLn, "", "")
		} else {
			err = s.http.Serve(s.httpLn)
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.serveErr <- err
	}()
	return nil
}

// GRPCAddr and HTTPAddr are the bound addresses (the real port when the
// configured one was 0).
func (s *Server) GRPCAddr() string { return s.grpcLn.Addr().String() }
func (s *Server) HTTPAddr() string { return s.httpLn.Addr().String() }

// Failed yields an error when a listener stops serving on its own.
func (s *Server) Failed() <-chan error { return s.serveErr }

// Shutdown stops accepting, lets in-flight requests finish until ctx ends
// and then cuts the rest off.
func (s *Server) Shutdown(ctx context.Context) error {
	httpErr := s.http.Shutdown(ctx)
	s.bb.hub.closeAll()
	stopped := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		s.grpc.Stop()
		<-stopped
	}
	if errors.Is(httpErr, context.DeadlineExceeded) {
		s.http.Close()
	}
	return httpErr
}
