package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/utxostore/utxostore/blockbook"
	"github.com/utxostore/utxostore/electrum"
	"github.com/utxostore/utxostore/internal/setting"
)

// Defaults of the daemon. The ports sit next to Bitcoin's 8333 so they are
// easy to remember; both listen on loopback only unless told otherwise.
const (
	DefaultGRPCAddr   = "127.0.0.1:8335"
	DefaultHTTPAddr   = "127.0.0.1:8334"
	DefaultMaxBatch   = 10_000
	DefaultMaxBody    = 1 << 20  // HTTP request body: the API has no writes
	DefaultMaxMessage = 64 << 20 // gRPC message: one whole block must fit
	// DefaultMaxInflightBytes lets 16 calls of the largest message run at
	// once.
	DefaultMaxInflightBytes = 16 * DefaultMaxMessage
	// DefaultMaxConns bounds the connections of each listener, well under
	// the usual open-file limits.
	DefaultMaxConns          = 512
	DefaultHTTPHeaderTimeout = 10 * time.Second
	DefaultHTTPReadTimeout   = 60 * time.Second
	DefaultHTTPWriteTimeout  = 60 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	// DefaultGRPCReadTimeout gives a call's message as long as an HTTP
	// request's body (DefaultHTTPReadTimeout): a whole block over a slow
	// link fits.
	DefaultGRPCReadTimeout = DefaultHTTPReadTimeout
	// DefaultGRPCMaxStreams is the calls one gRPC connection may have open
	// at once (nginx's http2_max_concurrent_streams default).
	DefaultGRPCMaxStreams = 128
	// DefaultMaxConnRequests is the requests one HTTP connection serves
	// before it is closed (nginx's keepalive_requests default).
	DefaultMaxConnRequests = 1000
	// DefaultMaxWebsockets is half the HTTP connections: websockets hold
	// slots of their own, not the API's.
	DefaultMaxWebsockets = DefaultMaxConns / 2
)

// Options configure the daemon.
type Options struct {
	GRPCAddr string
	HTTPAddr string
	// ElectrumAddr, when set, serves the Electrum protocol there (package
	// electrum), with the daemon's TLS and --max-conns. Its clients send
	// no token: like --http-public, it answers reads and broadcasts
	// without one, and beyond loopback it needs what the other listeners
	// need there (a token configured, and TLS or --trusted-network).
	ElectrumAddr string
	// Electrum bounds the Electrum clients (package electrum); zero takes
	// its defaults.
	Electrum electrum.Limits
	// HealthAddr, when set, is a listener of its own for /health/live and
	// /health/ready (they stay on HTTPAddr too): no load on the API's
	// listener can keep a probe from its answer there.
	HealthAddr string
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// every mutating RPC and on every HTTP request but /health/*. It is
	// mandatory when either address is not loopback.
	Token string
	// HTTPPublic serves /api and /metrics without the token.
	HTTPPublic bool
	// TrustedNetwork allows a token over plain TCP on a non-loopback
	// address; without it, a token there needs TLS, since anyone on the
	// path could read it.
	TrustedNetwork bool
	// TLSCert and TLSKey (PEM files) turn on TLS for every listener.
	TLSCert, TLSKey string
	// MaxBatch bounds the items of one batch RPC.
	MaxBatch int
	// MaxBody bounds an HTTP request body and a websocket message;
	// MaxMessage a gRPC message.
	MaxBody    int64
	MaxMessage int
	// MaxInflightBytes bounds the gRPC request memory of the calls being
	// served: a call whose message has arrived reserves its size from it
	// before it is handled, and waits while the rest is reserved. One
	// connection reads one call's message at a time (grpc_inflight.go).
	MaxInflightBytes int64
	// GRPCReadTimeout bounds the time from a call's headers to the end of
	// its message; the connection of a call over it is closed.
	GRPCReadTimeout time.Duration
	// GRPCMaxStreams bounds the calls one gRPC connection has open at once.
	GRPCMaxStreams int
	// MaxConns bounds the open connections of each listener; more wait to
	// be accepted.
	MaxConns int
	// HTTPHeaderTimeout bounds reading a request's headers (and a gRPC
	// connection's handshake); HTTPReadTimeout the whole request, body
	// included; HTTPWriteTimeout the time from a request's headers to the
	// end of its answer, which is also how long its work may run (and a
	// websocket request's); IdleTimeout how long a connection without a
	// request in progress is kept (HTTP keep-alive, gRPC, a websocket
	// that sends nothing).
	HTTPHeaderTimeout time.Duration
	HTTPReadTimeout   time.Duration
	HTTPWriteTimeout  time.Duration
	IdleTimeout       time.Duration
	// MaxConnRequests is the requests one HTTP connection serves before it
	// is closed, which bounds the answers a client that pipelines requests
	// can leave unread.
	MaxConnRequests int
	// MaxWebsockets bounds the open websockets; an upgraded connection
	// gives its HTTP slot (MaxConns) back and holds one of these.
	MaxWebsockets int
	// Blockbook bounds the work of one request to Blockbook's API and its
	// websocket subscriptions (package blockbook); zero takes its
	// defaults.
	Blockbook blockbook.Limits
	// Engine and Network are reported by Health and /api/status.
	Engine  string
	Network string
	// ExternalAbove is the transaction size above which creates go to the
	// blob store (utxo.Options.MaxTxSizeInStore), for utxo_create_external.
	ExternalAbove int
	// Snapshots take the whole-store copies of the Backup and DumpCoins
	// RPCs; nil refuses them as unimplemented.
	Snapshots Snapshots
	// Logger receives a record of every call answered with a server
	// fault (HTTP 5xx, gRPC Internal, Unknown, DataLoss, Unavailable);
	// nil means slog.Default().
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	setting.Default(&o.MaxBatch, DefaultMaxBatch)
	setting.Default(&o.MaxBody, DefaultMaxBody)
	setting.Default(&o.MaxMessage, DefaultMaxMessage)
	setting.Default(&o.MaxInflightBytes, DefaultMaxInflightBytes)
	setting.Default(&o.MaxConns, DefaultMaxConns)
	setting.Default(&o.HTTPHeaderTimeout, DefaultHTTPHeaderTimeout)
	setting.Default(&o.HTTPReadTimeout, DefaultHTTPReadTimeout)
	setting.Default(&o.HTTPWriteTimeout, DefaultHTTPWriteTimeout)
	setting.Default(&o.IdleTimeout, DefaultIdleTimeout)
	setting.Default(&o.GRPCReadTimeout, DefaultGRPCReadTimeout)
	setting.Default(&o.GRPCMaxStreams, DefaultGRPCMaxStreams)
	setting.Default(&o.MaxConnRequests, DefaultMaxConnRequests)
	setting.Default(&o.MaxWebsockets, DefaultMaxWebsockets)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// ErrTokenRequired refuses to expose writes without authentication.
var ErrTokenRequired = errors.New("a non-loopback address needs a bearer token (--token or UTXOSTORE_TOKEN), because anyone who can reach it could change the store")

// ErrTokenInClear refuses to send the token in clear over a network.
var ErrTokenInClear = errors.New("a bearer token on a non-loopback address needs TLS (--tls-cert, --tls-key), because anyone on the path could read it; --trusted-network allows it on a network you trust")

// Validate checks the options without binding anything.
func (o Options) Validate() error {
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return errors.New("TLS needs both --tls-cert and --tls-key")
	}
	if o.MaxInflightBytes > 0 && o.MaxMessage > 0 && o.MaxInflightBytes < int64(o.MaxMessage) {
		return fmt.Errorf("--max-inflight-bytes %d is under --max-message %d: not even one largest message would fit", o.MaxInflightBytes, o.MaxMessage)
	}
	if o.HealthAddr != "" {
		// The health answers are open on any address: they need no
		// token and tell nothing a probe should not know.
		if _, _, err := net.SplitHostPort(o.HealthAddr); err != nil {
			return fmt.Errorf("--health %q: %w", o.HealthAddr, err)
		}
	}
	addrs := []string{o.GRPCAddr, o.HTTPAddr}
	if o.ElectrumAddr != "" {
		addrs = append(addrs, o.ElectrumAddr)
	}
	for _, addr := range addrs {
		loopback, err := IsLoopback(addr)
		if err != nil {
			return err
		}
		if !loopback && o.Token == "" {
			return fmt.Errorf("%s: %w", addr, ErrTokenRequired)
		}
		if !loopback && o.TLSCert == "" && !o.TrustedNetwork {
			return fmt.Errorf("%s: %w", addr, ErrTokenInClear)
		}
	}
	return nil
}

// IsLoopback reports whether addr (host:port) binds only the loopback
// interface. An empty host binds every interface, so it is not loopback.
func IsLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("address %q: %w", addr, err)
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}
