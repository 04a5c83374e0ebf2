// Package electrum is the Electrum protocol server of the daemon
// (versions 1.4 and 1.5): JSON-RPC 2.0, one request or batch a line, over
// TCP or TLS, as Electrum wallets and their libraries speak it to
// ElectrumX, Fulcrum or electrs. It answers from the store, the address
// index with its Electrum columns (index/electrum.go) and the block store,
// through Reads, and changes nothing itself: a broadcast is handed to the
// daemon's node.
//
// Each method's handler is in the file named for what it serves:
// server.go (connections, their limits, the dispatch, server.*,
// blockchain.estimatefee and .relayfee), headers.go (blockchain.block.*,
// blockchain.headers.subscribe, checkpoint proofs), scripthash.go
// (blockchain.scripthash.*), mempool.go (the view of the unmined
// transactions they read, mempool.get_fee_histogram), transaction.go
// (blockchain.transaction.*) and notify.go (what subscribers hear).
//
// The daemon (package server) binds the listener, with its TLS and its
// connection limit, and hands it to Serve.
package electrum

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/blockbook"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/feerate"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/internal/setting"
)

// Reads are the reads the server makes: Blockbook's (the store, the
// address index, the block store) and the index's Electrum columns.
type Reads interface {
	blockbook.Reads
	// Scripts are the address index's Electrum columns, nil without the
	// index.
	Scripts() ScriptReads
	// Changes counts the writes made to the store: the mempool view is
	// read again when it moves.
	Changes() uint64
}

// ScriptReads are the reads of the index's Electrum columns
// (index.Index).
type ScriptReads interface {
	Script(h index.ScriptHash) (script []byte, ok bool, err error)
	PaysP2PK(txid chainhash.Hash, vout uint32, input bool) (bool, error)
}

// Txs finds transactions as Blockbook's API does (blockbook.API).
type Txs interface {
	RawTx(ctx context.Context, txid chainhash.Hash) (raw []byte, height int64, ok bool, err error)
	VerboseTx(ctx context.Context, txid chainhash.Hash) (v any, ok bool, err error)
}

// Defaults of the limits.
const (
	// DefaultMaxSubs is the script hashes one connection may subscribe
	// to (ElectrumX's max_session_subs); DefaultMaxSubsTotal those of
	// every connection together (ElectrumX's max_subs).
	DefaultMaxSubs      = 50_000
	DefaultMaxSubsTotal = 1_000_000
	// DefaultMaxHistory is the entries one history answer holds: about
	// 1 MB of JSON, ElectrumX's max_send.
	DefaultMaxHistory = 10_000
	// DefaultMaxRequest bounds one line a client sends: a batch, or the
	// largest transaction a broadcast carries in hex.
	DefaultMaxRequest = 4 << 20
	// DefaultIdleTimeout is how long a connection may send nothing:
	// Electrum pings every five minutes; ElectrumX's session_timeout.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultMaxStatusTxs bounds the transactions a script hash's
	// status, balance or unspent outputs gather: Blockbook's
	// --max-request-txs, which the daemon passes.
	DefaultMaxStatusTxs = blockbook.DefaultMaxRequestTxs
	// pollEvery is how often the server looks for a change in the
	// store's mempool to notify subscribers of (blocks are announced).
	pollEvery = time.Second
)

// Limits bound what one client can hold or make the server do; a request
// over one is refused with an error naming its flag. Zero takes the
// default.
type Limits struct {
	// MaxSubs bounds the script hashes one connection subscribes to,
	// MaxSubsTotal those of every connection together.
	MaxSubs      int
	MaxSubsTotal int
	// MaxHistory bounds the entries of one history answer; a longer
	// history is asked for by height range (protocol 1.5).
	MaxHistory int
	// MaxRequest bounds one line a client sends, in bytes; over it, the
	// connection is answered an error and closed.
	MaxRequest int
	// IdleTimeout closes a connection that sends nothing for that long.
	IdleTimeout time.Duration
}

// Options configure the server. Zero takes the default.
type Options struct {
	Limits
	// MaxStatusTxs bounds the transactions a script hash's status,
	// balance or unspent outputs gather (the daemon's --max-request-txs).
	MaxStatusTxs int
	// RequestTimeout bounds the work of one request (the daemon's
	// --http-write-timeout).
	RequestTimeout time.Duration
	// Network is the store's network, whose genesis hash server.features
	// names.
	Network string
	// Banner is what server.banner answers.
	Banner string
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	setting.Default(&o.MaxSubs, DefaultMaxSubs)
	setting.Default(&o.MaxSubsTotal, DefaultMaxSubsTotal)
	setting.Default(&o.MaxHistory, DefaultMaxHistory)
	setting.Default(&o.MaxRequest, DefaultMaxRequest)
	setting.Default(&o.MaxStatusTxs, DefaultMaxStatusTxs)
	setting.Default(&o.IdleTimeout, DefaultIdleTimeout)
	setting.Default(&o.RequestTimeout, time.Minute)
	if o.Banner == "" {
		o.Banner = "utxostore"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// ServerVersion is the software server.version names.
const ServerVersion = "utxostore 1.0"

// Protocol versions spoken: 1.4, and 1.5's history by height range.
const (
	protocolMin = "1.4"
	protocolMax = "1.5"
)

// Server serves the Electrum protocol.
type Server struct {
	reads Reads
	txs   Txs
	fees  *feerate.Estimator
	node  func() blockbook.Node
	opts  Options
	log   *slog.Logger
	// genesis is the network's genesis block hash.
	genesis chainhash.Hash

	pool   mempoolCache
	blocks blockCache
	hashes hashCache
	// checkpoints keeps what checkpoint proofs share (headers.go).
	checkpoints checkpointTrees
	metrics     *metrics

	mu        sync.Mutex
	conns     map[*conn]struct{}
	listeners map[net.Listener]struct{}
	subsTotal atomic.Int64
	closed    chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
	// pending is what the blocks connected or disconnected since the
	// notifier last ran touched (nil: none); lastBlock is the tip they
	// left.
	pending   *blockTouch
	lastBlock *chainhash.Hash
	// changed wakes the notifier: a block was connected or disconnected.
	changed chan struct{}
}

// New builds the server. node returns the node a broadcast is handed to
// (nil while none is connected).
func New(reads Reads, txs Txs, fees *feerate.Estimator, node func() blockbook.Node, opts Options) *Server {
	opts = opts.withDefaults()
	s := &Server{reads: reads, txs: txs, fees: fees, node: node, opts: opts, log: opts.Logger,
		conns: map[*conn]struct{}{}, listeners: map[net.Listener]struct{}{}, metrics: newMetrics(),
		closed: make(chan struct{}), changed: make(chan struct{}, 1)}
	if params, err := chain.NetworkParams(opts.Network); err == nil {
		s.genesis = *params.GenesisHash
	}
	s.wg.Add(1)
	go s.notifier()
	return s
}

// Serve accepts connections on ln until it is closed or the server is.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			select {
			case <-s.closed:
				return nil
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveConn(c)
		}()
	}
}

// Close closes the listeners and every connection, and waits for them.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.closed)
		s.mu.Lock()
		for ln := range s.listeners {
			ln.Close()
		}
		for c := range s.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
	})
	s.wg.Wait()
	return nil
}

// conn is one client connection.
type conn struct {
	s  *Server
	nc net.Conn

	// out queues the messages to send (answers and notifications, in
	// order), which writer writes; closing ends the writer once it has
	// written what is queued.
	out     chan []byte
	closing chan struct{}
	written chan struct{}

	mu      sync.Mutex
	version string // the negotiated protocol version; "" before server.version
	// subs are the script hashes subscribed to, with the status last sent.
	subs    map[index.ScriptHash]string
	headers bool   // subscribed to headers
	tipSent string // the tip hash last sent to a headers subscriber
}

func (s *Server) serveConn(nc net.Conn) {
	c := &conn{s: s, nc: nc, subs: map[index.ScriptHash]string{},
		out: make(chan []byte, sendQueue), closing: make(chan struct{}), written: make(chan struct{})}
	s.mu.Lock()
	select {
	case <-s.closed:
		s.mu.Unlock()
		nc.Close()
		return
	default:
	}
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	s.metrics.conns.Inc()
	go c.writer()
	defer func() {
		s.metrics.conns.Dec()
		close(c.closing)
		<-c.written
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.mu.Lock()
		s.subsTotal.Add(-int64(len(c.subs)))
		c.subs = nil
		c.mu.Unlock()
		nc.Close()
	}()
	r := bufio.NewReaderSize(nc, 64<<10)
	for {
		_ = nc.SetReadDeadline(time.Now().Add(s.opts.IdleTimeout))
		line, err := readLine(r, s.opts.MaxRequest)
		if errors.Is(err, errLineTooLong) {
			c.send(errorReply(nil, codeInvalidRequest, fmt.Sprintf("a request over %d bytes, the limit (--electrum-max-request)", s.opts.MaxRequest)))
			return
		}
		if err != nil {
			return
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.RequestTimeout)
		out := c.handleLine(ctx, line)
		cancel()
		if out != nil && !c.answer(out) {
			return
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine reads one newline-ended line of at most max bytes.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		line = append(line, part...)
		if len(line) > max {
			return nil, errLineTooLong
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == io.EOF && len(line) > 0 {
			return line, nil
		}
		return line, err
	}
}

// sendQueue is the messages a connection may have unsent: a client that
// reads nothing is disconnected once they are queued, and cannot hold the
// server's notifications of the other clients back.
const sendQueue = 256

// send queues a notification; false when the connection is gone, or was
// closed because its queue is full: notifications go out from the block
// path, which waits for no client.
func (c *conn) send(v any) bool { return c.queue(v, 0) }

// answer queues the answer to a request, waiting up to the request
// timeout while the queue is full: a wallet that sends its requests
// without waiting for each answer (its subscriptions, say) reads them
// more slowly than they are answered, and its further requests wait
// unread meanwhile. A client that reads nothing is disconnected then.
func (c *conn) answer(v any) bool { return c.queue(v, c.s.opts.RequestTimeout) }

// queue queues one message, waiting at most wait for room; false when the
// connection is gone, or was closed because its client does not read.
func (c *conn) queue(v any, wait time.Duration) bool {
	b, err := json.Marshal(v)
	if err != nil {
		c.s.log.Error("electrum: encoding an answer", "error", err)
		return false
	}
	b = append(b, '\n')
	select {
	case <-c.closing:
		return false
	case c.out <- b:
		return true
	default:
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-c.closing:
			return false
		case c.out <- b:
			return true
		case <-t.C:
		}
	}
	c.nc.Close()
	return false
}

// writer writes the queued messages, each within the request timeout,
// until the connection ends; then it writes what is still queued.
func (c *conn) writer() {
	defer close(c.written)
	w := bufio.NewWriter(c.nc)
	failed := false
	write := func(b []byte) {
		if failed {
			return
		}
		_ = c.nc.SetWriteDeadline(time.Now().Add(c.s.opts.RequestTimeout))
		if _, err := w.Write(b); err != nil || len(c.out) == 0 && w.Flush() != nil {
			failed = true
			c.nc.Close()
		}
	}
	for {
		select {
		case b := <-c.out:
			write(b)
		case <-c.closing:
			for {
				select {
				case b := <-c.out:
					write(b)
				default:
					if !failed {
						_ = w.Flush()
					}
					return
				}
			}
		}
	}
}

// JSON-RPC 2.0 error codes, and the protocol's own.
const (
	codeParse          = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternal       = -32603
	// codeBadRequest and codeDaemon are ElectrumX's: a request it
	// refuses, and an error of the node behind it.
	codeBadRequest = 1
	codeDaemon     = 2
)

type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

type reply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result"`
}

type errReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcError        `json:"error"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return e.Message }

func errorReply(id json.RawMessage, code int, msg string) errReply {
	if id == nil {
		id = json.RawMessage("null")
	}
	return errReply{JSONRPC: "2.0", ID: id, Error: rpcError{Code: code, Message: msg}}
}

// badRequest is a request the server refuses: bad parameters, or over a
// limit (its message names the flag).
func badRequest(format string, args ...any) error {
	return &rpcError{Code: codeBadRequest, Message: fmt.Sprintf(format, args...)}
}

func invalidParams(format string, args ...any) error {
	return &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// handleLine answers one line: a request, a notification (no answer) or
// a batch of them.
func (c *conn) handleLine(ctx context.Context, line []byte) any {
	if line[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(line, &batch); err != nil {
			return errorReply(nil, codeParse, "the batch is not JSON: "+err.Error())
		}
		if len(batch) == 0 {
			return errorReply(nil, codeInvalidRequest, "an empty batch")
		}
		var out []json.RawMessage
		size := 0
		for _, raw := range batch {
			r := c.handleOne(ctx, raw)
			if r == nil {
				continue
			}
			b, err := json.Marshal(r)
			if err != nil {
				return errorReply(nil, codeInternal, err.Error())
			}
			if size += len(b); size > maxBatchAnswer {
				return errorReply(nil, codeBadRequest, fmt.Sprintf("the batch's answers pass %d bytes, the most a batch is answered with; send fewer requests at once", maxBatchAnswer))
			}
			out = append(out, b)
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return c.handleOne(ctx, line)
}

// maxBatchAnswer bounds the answers to one batch, as ElectrumX's max_send
// bounds a message. Each answer is bounded (about 1 MB of headers or of
// history at the most), but a batch of thousands of such requests in one
// line of --electrum-max-request would be answered with gigabytes, built
// in memory.
const maxBatchAnswer = 16 << 20

func (c *conn) handleOne(ctx context.Context, raw []byte) any {
	var req request
	if err := json.Unmarshal(raw, &req); err != nil {
		return errorReply(nil, codeParse, "the request is not JSON: "+err.Error())
	}
	if req.Method == "" {
		return errorReply(req.ID, codeInvalidRequest, "the request names no method")
	}
	params, err := parseParams(req.Params)
	if err != nil {
		return errorReply(req.ID, codeInvalidParams, err.Error())
	}
	result, err := c.call(ctx, req.Method, params)
	var unknown *rpcError
	c.s.metrics.count(req.Method, !errors.As(err, &unknown) || unknown.Code != codeMethodNotFound, err)
	if req.ID == nil || string(req.ID) == "null" {
		return nil // a notification: no answer
	}
	if err != nil {
		var re *rpcError
		switch {
		case errors.As(err, &re):
			return errorReply(req.ID, re.Code, re.Message)
		case errors.Is(err, context.DeadlineExceeded):
			return errorReply(req.ID, codeInternal, "the request ran out of time (--http-write-timeout)")
		default:
			c.s.log.Error("electrum request failed", "method", req.Method, "error", err)
			return errorReply(req.ID, codeInternal, err.Error())
		}
	}
	return reply{JSONRPC: "2.0", ID: req.ID, Result: result}
}

// params are a request's parameters: by position (the protocol's way) or
// by name.
type params struct {
	list  []json.RawMessage
	named map[string]json.RawMessage
}

func parseParams(raw json.RawMessage) (params, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return params{}, nil
	}
	var p params
	if raw[0] == '{' {
		return p, json.Unmarshal(raw, &p.named)
	}
	if err := json.Unmarshal(raw, &p.list); err != nil {
		return p, fmt.Errorf("params must be a list or an object: %v", err)
	}
	return p, nil
}

// get decodes parameter i (or the one named name) into v; ok is false
// when it is absent.
func (p params) get(i int, name string, v any) (ok bool, err error) {
	var raw json.RawMessage
	if p.named != nil {
		raw, ok = p.named[name]
	} else if i < len(p.list) {
		raw, ok = p.list[i], true
	}
	if !ok || string(raw) == "null" {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, invalidParams("parameter %s: %v", name, err)
	}
	return true, nil
}

// need is get for a parameter that must be there.
func (p params) need(i int, name string, v any) error {
	ok, err := p.get(i, name, v)
	if err == nil && !ok {
		err = invalidParams("parameter %s is missing", name)
	}
	return err
}

// call runs one method.
func (c *conn) call(ctx context.Context, method string, p params) (any, error) {
	s := c.s
	switch method {
	case "server.version":
		return c.serverVersion(p)
	case "server.features":
		return s.features(), nil
	case "server.banner":
		return s.opts.Banner, nil
	case "server.donation_address":
		return "", nil
	case "server.ping":
		return nil, nil
	case "server.peers.subscribe":
		return []any{}, nil // this server knows no peers to announce
	case "server.add_peer":
		return false, nil
	case "blockchain.headers.subscribe":
		return c.headersSubscribe(ctx)
	case "blockchain.block.header":
		return s.blockHeader(ctx, p)
	case "blockchain.block.headers":
		return s.blockHeaders(ctx, p)
	case "blockchain.estimatefee":
		var target int
		if err := p.need(0, "number", &target); err != nil {
			return nil, err
		}
		rate, err := s.fees.Estimate(ctx, target)
		if err != nil {
			return nil, err
		}
		return rate.Float(), nil
	case "blockchain.relayfee":
		return feerate.MinRelay.Float(), nil
	case "mempool.get_fee_histogram":
		return s.feeHistogram(ctx)
	case "blockchain.scripthash.get_balance":
		return s.getBalance(ctx, p)
	case "blockchain.scripthash.get_history":
		return s.getHistory(ctx, p, c.protocol())
	case "blockchain.scripthash.get_mempool":
		return s.getMempool(ctx, p)
	case "blockchain.scripthash.listunspent":
		return s.listUnspent(ctx, p)
	case "blockchain.scripthash.subscribe":
		return c.subscribe(ctx, p)
	case "blockchain.scripthash.unsubscribe":
		return c.unsubscribe(p)
	case "blockchain.transaction.get":
		return s.transactionGet(ctx, p)
	case "blockchain.transaction.get_merkle":
		return s.transactionMerkle(ctx, p)
	case "blockchain.transaction.id_from_pos":
		return s.idFromPos(ctx, p)
	case "blockchain.transaction.broadcast":
		return s.broadcast(ctx, p)
	}
	return nil, &rpcError{Code: codeMethodNotFound, Message: fmt.Sprintf("unknown method %q", method)}
}

func (c *conn) protocol() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version == "" {
		return protocolMin
	}
	return c.version
}

// serverVersion negotiates the protocol: the highest version both
// speak, the client's [min, max] or its one version.
func (c *conn) serverVersion(p params) (any, error) {
	var raw json.RawMessage
	if _, err := p.get(1, "protocol_version", &raw); err != nil {
		return nil, err
	}
	lo, hi := protocolMin, protocolMin
	if len(raw) > 0 {
		var one string
		var pair []string
		switch {
		case json.Unmarshal(raw, &one) == nil:
			lo, hi = one, one
		case json.Unmarshal(raw, &pair) == nil && len(pair) == 2:
			lo, hi = pair[0], pair[1]
		default:
			return nil, invalidParams("protocol_version must be a version or a [min, max] pair")
		}
	}
	version := ""
	for _, v := range []string{protocolMax, protocolMin} {
		if versionLE(lo, v) && versionLE(v, hi) {
			version = v
			break
		}
	}
	if version == "" {
		return nil, badRequest("unsupported protocol version %s to %s: this server speaks %s to %s", lo, hi, protocolMin, protocolMax)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != "" && c.version != version {
		return nil, badRequest("server.version was already sent")
	}
	c.version = version
	return []string{ServerVersion, version}, nil
}

// versionLE compares dotted versions ("1.4" <= "1.4.2").
func versionLE(a, b string) bool {
	var pa, pb [4]int
	fmt.Sscanf(a, "%d.%d.%d.%d", &pa[0], &pa[1], &pa[2], &pa[3])
	fmt.Sscanf(b, "%d.%d.%d.%d", &pb[0], &pb[1], &pb[2], &pb[3])
	for i := range pa {
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return true
}

func (s *Server) features() map[string]any {
	return map[string]any{
		"genesis_hash":   s.genesis.String(),
		"hosts":          map[string]any{},
		"protocol_min":   protocolMin,
		"protocol_max":   protocolMax,
		"pruning":        nil,
		"server_version": ServerVersion,
		"hash_function":  "sha256",
	}
}
