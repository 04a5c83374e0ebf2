package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	"github.com/utxostore/utxostore/blockbook"
	"github.com/utxostore/utxostore/electrum"
	pb "github.com/utxostore/utxostore/proto/utxostorepb"
	"github.com/utxostore/utxostore/utxo"
)

// Server is the running daemon: one gRPC and one HTTP listener over an
// instrumented backend, the HTTP one serving Blockbook's API.
type Server struct {
	opts Options
	// backend is the instrumented backend with the Summary cache above
	// it, as both APIs read it.
	backend Backend
	metrics *Metrics
	grpc    *grpc.Server
	http    *http.Server
	// health serves /health/* on Options.HealthAddr, nil without one.
	health   *http.Server
	inflight *inflight
	tls      *tls.Config

	log *slog.Logger
	// bb is Blockbook's API, mounted on the HTTP listener.
	bb *blockbook.API
	// el is the Electrum server, nil without Options.ElectrumAddr.
	el *electrum.Server

	grpcLn, httpLn, healthLn, electrumLn *limitListener
	serveErr                             chan error
	// websockets are the open websockets' slots (Options.MaxWebsockets).
	websockets chan struct{}
	announce   *announcer
}

// New builds the daemon over backend; it listens on Start. The caller keeps
// ownership of the store and closes it after Shutdown.
func New(backend Backend, opts Options) (*Server, error) {
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Server{opts: opts, log: opts.Logger, metrics: NewMetrics(), serveErr: make(chan error, 3),
		websockets: make(chan struct{}, opts.MaxWebsockets)}
	s.backend = &cachedSummary{Backend: NewInstrumented(backend, s.metrics, opts.ExternalAbove)}
	s.bb = blockbook.New(s.backend, blockbook.Options{Limits: opts.Blockbook, Network: opts.Network, Engine: opts.Engine,
		MaxMessage: opts.MaxBody, IdleTimeout: opts.IdleTimeout, RequestTimeout: opts.HTTPWriteTimeout})
	if opts.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(opts.TLSCert, opts.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("loading the TLS certificate: %w", err)
		}
		s.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	s.inflight = newInflight(opts.MaxInflightBytes, opts.GRPCReadTimeout, s.log, s.metrics.awaitingMessage)
	grpcOpts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(opts.MaxMessage),
		grpc.InTapHandle(tapAuth(opts.Token)),
		grpc.StatsHandler(s.inflight),
		grpc.MaxConcurrentStreams(uint32(opts.GRPCMaxStreams)),
		grpc.InitialWindowSize(grpcStreamWindow),
		grpc.InitialConnWindowSize(grpcConnWindow),
		grpc.ChainUnaryInterceptor(s.logUnaryFaults),
		grpc.ChainStreamInterceptor(s.logStreamFaults),
		grpc.ConnectionTimeout(opts.HTTPHeaderTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: opts.IdleTimeout}),
	}
	if s.tls != nil {
		grpcOpts = append(grpcOpts, grpc.Creds(credentials.NewTLS(s.tls)))
	}
	s.grpc = grpc.NewServer(grpcOpts...)
	pb.RegisterUtxoStoreServer(s.grpc, &grpcService{b: s.backend, metrics: s.metrics, maxBatch: opts.MaxBatch, engine: opts.Engine,
		network: opts.Network, node: s.bb.Node, snapshots: opts.Snapshots})
	if opts.ElectrumAddr != "" {
		s.el = electrum.New(s.backend, s.bb, s.bb.Fees(), s.bb.Node, electrum.Options{Limits: opts.Electrum,
			MaxStatusTxs: s.bb.Limits().MaxRequestTxs, RequestTimeout: opts.HTTPWriteTimeout, Network: opts.Network, Logger: opts.Logger})
		s.metrics.Registry.MustRegister(s.el.Collectors()...)
	}
	s.announce = newAnnouncer(s.log, opts.HTTPWriteTimeout, func(ctx context.Context, b utxo.Block, disconnected bool) {
		switch {
		case disconnected && s.el != nil:
			s.el.NotifyDisconnect(ctx, b)
		case !disconnected:
			s.bb.NotifyBlock(ctx, b) // Blockbook's websocket pushes new blocks only
			if s.el != nil {
				s.el.NotifyBlock(ctx, b)
			}
		}
	})
	s.http = s.httpServer(s.routes())
	s.http.ConnContext = withConnState
	if opts.HealthAddr != "" {
		s.health = s.httpServer(s.healthRoutes())
	}
	return s, nil
}

// httpServer is an HTTP server of the daemon's timeouts and TLS.
func (s *Server) httpServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, TLSConfig: s.tls,
		ReadHeaderTimeout: s.opts.HTTPHeaderTimeout, ReadTimeout: s.opts.HTTPReadTimeout,
		WriteTimeout: s.opts.HTTPWriteTimeout, IdleTimeout: s.opts.IdleTimeout}
}

// Metrics returns the daemon's metrics.
func (s *Server) Metrics() *Metrics { return s.metrics }

// Blockbook returns Blockbook's API the daemon serves: the caller plugs
// in its node (SetNode, which gRPC SendTx uses too).
func (s *Server) Blockbook() *blockbook.API { return s.bb }

// Electrum returns the Electrum server, nil without --electrum.
func (s *Server) Electrum() *electrum.Server { return s.el }

// NotifyBlock tells the subscribers of Blockbook's websocket and of
// Electrum of a block connected; the caller has the block path call it
// (blockpath.Path.OnConnect). It returns at once: the notifications go
// out from a goroutine of the daemon's (see announcer).
func (s *Server) NotifyBlock(_ context.Context, b utxo.Block) { s.announce.add(b, false) }

// NotifyDisconnect tells Electrum's subscribers of a block a
// reorganisation disconnected, so that only the statuses it touched are
// read again; the caller has the block path call it
// (blockpath.Path.OnDisconnect). It returns at once, as NotifyBlock.
func (s *Server) NotifyDisconnect(_ context.Context, b utxo.Block) { s.announce.add(b, true) }

// Start binds the listeners and serves in the background. Each holds at
// most --max-conns connections; more wait in the kernel's backlog until
// one closes, so they cost the process no file descriptor.
func (s *Server) Start() error {
	listen := func(what, addr string) (*limitListener, error) {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("%s listener: %w", what, err)
		}
		return newLimitListener(ln, s.opts.MaxConns), nil
	}
	var err error
	if s.grpcLn, err = listen("gRPC", s.opts.GRPCAddr); err != nil {
		return err
	}
	if s.httpLn, err = listen("HTTP", s.opts.HTTPAddr); err != nil {
		s.grpcLn.Close()
		return err
	}
	if s.health != nil {
		if s.healthLn, err = listen("health", s.opts.HealthAddr); err != nil {
			s.grpcLn.Close()
			s.httpLn.Close()
			return err
		}
		go func() { s.serveErr <- s.serveHTTP(s.health, s.healthLn) }()
	}
	if s.el != nil {
		if s.electrumLn, err = listen("Electrum", s.opts.ElectrumAddr); err != nil {
			s.grpcLn.Close()
			s.httpLn.Close()
			if s.healthLn != nil {
				s.healthLn.Close()
			}
			return err
		}
		var ln net.Listener = s.electrumLn
		if s.tls != nil {
			ln = tls.NewListener(ln, s.tls)
		}
		go func() { s.serveErr <- s.el.Serve(ln) }()
	}
	s.inflight.listener = s.grpcLn
	go func() { s.serveErr <- s.grpc.Serve(s.grpcLn) }()
	go func() { s.serveErr <- s.serveHTTP(s.http, s.httpLn) }()
	return nil
}

// serveHTTP serves srv on ln until it is shut down.
func (s *Server) serveHTTP(srv *http.Server, ln net.Listener) error {
	var err error
	if s.tls != nil {
		err = srv.ServeTLS(ln, "", "")
	} else {
		err = srv.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// GRPCAddr and HTTPAddr are the bound addresses (the real port when the
// configured one was 0); ElectrumAddr and HealthAddr are those listeners',
// "" without them.
func (s *Server) GRPCAddr() string { return s.grpcLn.Addr().String() }
func (s *Server) HTTPAddr() string { return s.httpLn.Addr().String() }
func (s *Server) ElectrumAddr() string {
	if s.electrumLn == nil {
		return ""
	}
	return s.electrumLn.Addr().String()
}
func (s *Server) HealthAddr() string {
	if s.healthLn == nil {
		return ""
	}
	return s.healthLn.Addr().String()
}

// Failed yields an error when a listener stops serving on its own.
func (s *Server) Failed() <-chan error { return s.serveErr }

// Shutdown stops accepting, lets in-flight requests finish until ctx ends
// and then cuts the rest off.
func (s *Server) Shutdown(ctx context.Context) error {
	httpErr := s.http.Shutdown(ctx)
	if s.health != nil {
		httpErr = errors.Join(httpErr, s.health.Shutdown(ctx))
	}
	s.announce.stop()
	s.bb.Close()
	if s.el != nil {
		s.el.Close()
	}
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
		if s.health != nil {
			s.health.Close()
		}
	}
	return httpErr
}
