package server

import (
	"errors"
	"fmt"
	"net"
)

// Defaults of the daemon. The ports sit next to Bitcoin's 8333 so they are
// easy to remember; both listen on loopback only unless told otherwise.
const (
	DefaultGRPCAddr   = "127.0.0.1:8335"
	DefaultHTTPAddr   = "127.0.0.1:8334"
	DefaultMaxBatch   = 10_000
	DefaultMaxBody    = 1 << 20  // HTTP request body: the API has no writes
	DefaultMaxMessage = 64 << 20 // gRPC message: one whole block must fit
)

// Options configure the daemon.
type Options struct {
	GRPCAddr string
	HTTPAddr string
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// every mutating RPC. It is mandatory when either address is not
	// loopback.
	Token string
	// TLSCert and TLSKey (PEM files) turn on TLS for both listeners.
	TLSCert, TLSKey string
	// MaxBatch bounds the items of one batch RPC.
	MaxBatch int
	// MaxBody bounds an HTTP request body; MaxMessage a gRPC message.
	MaxBody    int64
	MaxMessage int
	// Engine and Network are reported by Health and /api/status.
	Engine  string
	Network string
	// ExternalAbove is the transaction size above which creates go to the
	// blob store (utxo.Options.MaxTxSizeInStore), for utxo_create_external.
	ExternalAbove int
	// Relay, when set, takes /api/v2/sendtx's transactions to the node the
	// daemon follows.
	Relay Relay
}

func (o Options) withDefaults() Options {
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.MaxMessage <= 0 {
		o.MaxMessage = DefaultMaxMessage
	}
	return o
}

// ErrTokenRequired refuses to expose writes without authentication.
var ErrTokenRequired = errors.New("a non-loopback address needs a bearer token (--token or UTXOSTORE_TOKEN), because anyone who can reach it could change the store")

// Validate checks the options without binding anything.
func (o Options) Validate() error {
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return errors.New("TLS needs both --tls-cert and --tls-key")
	}
	for _, addr := range []string{o.GRPCAddr, o.HTTPAddr} {
		loopback, err := IsLoopback(addr)
		if err != nil {
			return err
		}
		if !loopback && o.Token == "" {
			return fmt.Errorf("%s: %w", addr, ErrTokenRequired)
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
