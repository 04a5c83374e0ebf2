// Package client is the Go client of `utxostore serve`: a utxo.Store whose
// every method is a gRPC call, with the store's own types (chain.Tx,
// utxo.Meta, utxo.Spend), options and typed errors, so errors.Is(err,
// model.ErrSpent) works across the wire. Info, the batch forms and
// ConnectBlock add what only a daemon answers.
//
//	c, err := client.Dial("127.0.0.1:8335", client.Options{Token: os.Getenv("UTXOSTORE_TOKEN")})
//	meta, err := c.Get(ctx, txid)
package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/utxostore/utxostore/internal/setting"
	"github.com/utxostore/utxostore/proto/pbconv"
	pb "github.com/utxostore/utxostore/proto/utxostorepb"
	"github.com/utxostore/utxostore/utxo"
)

// Client is one more utxo.Store: every method is a call to the daemon.
var _ utxo.Store = (*Client)(nil)

// Options configure a connection.
type Options struct {
	// Token is sent as "authorization: Bearer <token>" on every call.
	Token string
	// TLS, when set, encrypts the connection (use &tls.Config{} for the
	// system roots).
	TLS *tls.Config
	// MaxMessage bounds the messages the client sends and receives; the
	// default is the server's default, 64 MiB.
	MaxMessage int
}

// Client is a connection to a utxostore daemon. It is safe for concurrent
// use.
type Client struct {
	conn *grpc.ClientConn
	rpc  pb.UtxoStoreClient
}

// Dial connects to the daemon's gRPC address (lazily: the first call
// connects).
func Dial(addr string, opts Options) (*Client, error) {
	setting.Default(&opts.MaxMessage, 64<<20)
	creds := insecure.NewCredentials()
	if opts.TLS != nil {
		creds = credentials.NewTLS(opts.TLS)
	}
	dialOpts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(opts.MaxMessage), grpc.MaxCallSendMsgSize(opts.MaxMessage)),
	}
	if opts.Token != "" {
		dialOpts = append(dialOpts, grpc.WithPerRPCCredentials(bearer{token: opts.Token}))
	}
	conn, err := grpc.NewClient(addr, dialOpts...)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", addr, err)
	}
	return &Client{conn: conn, rpc: pb.NewUtxoStoreClient(conn)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Stub returns the raw gRPC stub, for calls this package does not wrap.
func (c *Client) Stub() pb.UtxoStoreClient { return c.rpc }

// bearer sends the token with every call.
type bearer struct {
	token string
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

// RequireTransportSecurity is false so a token also works over loopback
// without TLS, the daemon's default.
func (b bearer) RequireTransportSecurity() bool { return false }

// callErr turns a gRPC error into the store's typed error when the status
// carries one, keeping the status reachable through errors.As.
func callErr(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	for _, d := range st.Details() {
		if se, ok := d.(*pb.StoreError); ok {
			if typed := pbconv.ErrorFromPB(se); typed != nil {
				return &Error{Status: st, Err: typed}
			}
		}
	}
	return &Error{Status: st, Err: errors.New(st.Message())}
}

// Error is a failed call: the gRPC status and, unwrapped, the store's
// typed error (a *model.Error) when the server sent one.
type Error struct {
	Status *status.Status
	Err    error
}

func (e *Error) Error() string { return e.Status.Code().String() + ": " + e.Status.Message() }
func (e *Error) Unwrap() error { return e.Err }

// GRPCStatus lets status.FromError and status.Code see through Error.
func (e *Error) GRPCStatus() *status.Status { return e.Status }
