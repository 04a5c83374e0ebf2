package blockbook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
	"github.com/gorilla/websocket"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/feerate"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/utxo"
)

// Blockbook v0.3.4's websocket API on /websocket: a request is
// {"id", "method", "params"}, its answer {"id", "data"}, an error
// {"id", "data": {"error": {"message"}}}. A subscription's pushes carry the
// id of the request that made it.

type wsRequest struct {
	ID     string          `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

type wsMessage struct {
	ID   string `json:"id"`
	Data any    `json:"data"`
	// request says the message answers a request the worker took, which
	// counts in pending until it is written.
	request bool
}

type wsError struct {
	Error struct {
		Message string `json:"message"`
	} `json:"error"`
}

// wsConn is one client: its queues and its subscriptions. Three
// goroutines serve it: the handler reads its messages, a worker answers
// its requests one at a time, and a writer writes the answers and pushes.
type wsConn struct {
	conn *websocket.Conn
	// requests wait for the worker, out for the writer. pending counts a
	// request from when it is read until its answer is written.
	requests chan wsRequest
	out      chan wsMessage
	pending  atomic.Int64
	// overflowed tells the writer that a push found out full: the writer
	// closes the connection, since push cannot wait for it.
	overflowed chan struct{}
	// large says the connection kept a message of wsLargeMessage or more:
	// its memory goes back to the system when it closes.
	large bool

	mu         sync.Mutex
	newBlockID string            // "" when not subscribed
	addrID     string            // the subscribeAddresses request's id
	addrs      map[string]string // addrDesc -> the address as the client named it
}

// wsHub is every connected client, for the pushes, and their subscribed
// addresses together.
type wsHub struct {
	mu      sync.Mutex
	conns   map[*wsConn]struct{}
	serving sync.WaitGroup // the handlers running
	// subscribed is the addresses every client subscribes to, together;
	// since is when it last went up from none.
	subscribed int
	since      time.Time
	// release, when set, returns freed memory to the system soon.
	release *time.Timer
}

// wsLargeMessage is the size of a message from which a connection's
// memory is worth returning to the system when it closes.
const wsLargeMessage = 16 << 10

// wsAddressBytes is what one address of a subscription may take in a
// message: the longest addresses (bech32) and most output scripts in hex,
// quoted. It sizes the largest request (wsMaxRequest).
const wsAddressBytes = 128

// wsMaxRequest is the largest message a websocket request may be: a
// subscription of --ws-max-addresses addresses, within MaxMessage. A
// larger message is refused unread, so a flood of large messages costs
// the daemon no memory.
func (a *API) wsMaxRequest() int64 {
	largest := 4<<10 + int64(a.opts.WSMaxAddresses)*wsAddressBytes
	if a.opts.MaxMessage > 0 {
		return min(a.opts.MaxMessage, largest)
	}
	return largest
}

var upgrader = websocket.Upgrader{
	// Blockbook answers any origin: the API is public and read-only.
	CheckOrigin: func(*http.Request) bool { return true },
}

// handleWebsocket serves one client, on WebsocketPath. (The daemon counts
// it against a limit of its own, --max-websockets, not against the HTTP
// connections.) A client that leaves --ws-queue requests unanswered or
// answers unread has its next requests answered "too many requests"
// without being worked on; one that reads nothing for the write timeout
// is disconnected.
func (a *API) handleWebsocket(w http.ResponseWriter, r *http.Request) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered the request
	}
	c := &wsConn{conn: conn, requests: make(chan wsRequest, a.opts.WSQueue), out: make(chan wsMessage, a.opts.WSQueue),
		overflowed: make(chan struct{}, 1), addrs: map[string]string{}}
	a.hub.add(c)
	defer a.hub.remove(c)
	conn.SetReadLimit(a.opts.MaxMessage)
	ctx, cancel := context.WithCancel(r.Context())
	var done sync.WaitGroup
	done.Add(2)
	// A writer that gives up (the client reads nothing) ends the rest.
	go func() { defer done.Done(); defer cancel(); c.write(ctx) }()
	go func() { defer done.Done(); a.wsWork(ctx, c) }()
	defer func() { cancel(); conn.Close(); done.Wait() }()
	maxRequest := a.wsMaxRequest()
	for {
		// The request's read deadline outlives the upgrade; a client must
		// send something (Blockbook's clients ping) within the idle timeout.
		if a.opts.IdleTimeout > 0 {
			_ = conn.SetReadDeadline(time.Now().Add(a.opts.IdleTimeout))
		}
		kind, reader, err := conn.NextReader()
		if err != nil {
			return
		}
		msg, whole, err := readMessage(reader, maxRequest)
		if err != nil {
			return
		}
		var reply any
		if !whole {
			reply = wsFail("a message over %d bytes is no request: the largest is a subscription of %d addresses (--ws-max-addresses)", maxRequest, a.opts.WSMaxAddresses)
		}
		c.large = c.large || len(msg) >= wsLargeMessage
		var req wsRequest
		if reply == nil {
			err := json.Unmarshal(msg, &req)
			if err == nil && kind != websocket.TextMessage {
				err = errors.New("a binary message")
			}
			if err != nil {
				reply = wsFail("the message is not a request {\"id\", \"method\", \"params\"}: %v", err)
			}
		}
		if reply == nil && c.pending.Load() >= int64(a.opts.WSQueue) {
			reply = wsFail("too many requests: %d wait unanswered or unread, the limit of one connection (--ws-queue); read the answers before asking more", a.opts.WSQueue)
		}
		if reply != nil {
			if !c.send(ctx, wsMessage{ID: requestID(msg, req), Data: reply}) {
				return
			}
			continue
		}
		c.pending.Add(1)
		c.requests <- req // pending bounds what waits: it never blocks
	}
}

// wsMessageHead is what readMessage reads of every message at first: a
// ping and most requests fit.
const wsMessageHead = 4 << 10

// readMessage reads a message of at most max bytes (whole), or, of a
// longer one, its first wsMessageHead bytes, reading the rest of it into
// nothing: a message too long costs the daemon one buffer of max bytes at
// most, for as long as it takes to read.
func readMessage(r io.Reader, max int64) (msg []byte, whole bool, err error) {
	ended := func(err error) bool { return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) }
	head := make([]byte, min(wsMessageHead, max+1))
	n, err := io.ReadFull(r, head)
	if ended(err) {
		return head[:n], true, nil
	}
	if err != nil {
		return nil, false, err
	}
	if int64(len(head)) <= max {
		msg = make([]byte, max+1)
		copy(msg, head)
		n, err = io.ReadFull(r, msg[len(head):])
		if ended(err) {
			return msg[:len(head)+n], true, nil
		}
		if err != nil {
			return nil, false, err
		}
	}
	_, err = io.Copy(io.Discard, r)
	return head, false, err
}

// requestID is the id of a request, or of a message refused before it was
// parsed whole, when its start shows it.
func requestID(msg []byte, req wsRequest) string {
	if req.ID != "" {
		return req.ID
	}
	dec := json.NewDecoder(bytes.NewReader(msg))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return ""
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return ""
		}
		var id string
		if key == "id" && json.Unmarshal(value, &id) == nil {
			return id
		}
	}
	return ""
}

// wsWork answers c's requests in turn, each within RequestTimeout and
// no longer than c stays connected.
func (a *API) wsWork(ctx context.Context, c *wsConn) {
	for {
		select {
		case req := <-c.requests:
			reqCtx, cancel := a.requestContext(ctx)
			data := a.wsCall(reqCtx, c, &req)
			cancel()
			if !c.send(ctx, wsMessage{ID: req.ID, Data: data, request: true}) {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// requestContext is the context of one websocket request's work: it ends
// after RequestTimeout (none when zero), or when ctx does.
func (a *API) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if a.opts.RequestTimeout > 0 {
		return context.WithTimeout(ctx, a.opts.RequestTimeout)
	}
	return context.WithCancel(ctx)
}

// write writes c's queued messages until ctx ends. A client that reads
// nothing for its deadline is disconnected, and so is one whose pushes
// overflowed its queue, before the messages that wait in it.
func (c *wsConn) write(ctx context.Context) {
	for {
		select {
		case <-c.overflowed:
			c.closeOverflowed()
			return
		default:
		}
		select {
		case <-c.overflowed:
			c.closeOverflowed()
			return
		case m := <-c.out:
			_ = c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
			err := c.conn.WriteJSON(m)
			if m.request {
				c.pending.Add(-1)
			}
			if err != nil {
				c.conn.Close()
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// closeOverflowed closes the connection with a close frame that says why.
func (c *wsConn) closeOverflowed() {
	_ = c.conn.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "too many messages unread: the client reads too slowly"),
		time.Now().Add(time.Second))
	c.conn.Close()
}

// send queues an answer for the writer, waiting while the queue is full:
// the client reads more slowly than it asks, and its requests wait unread
// meanwhile. It is false once c is closing.
func (c *wsConn) send(ctx context.Context, m wsMessage) bool {
	select {
	case c.out <- m:
		return true
	case <-ctx.Done():
		return false
	}
}

// push queues a block or transaction for a subscriber. The daemon cannot
// wait for one client to read, so a client whose queue is full is
// disconnected with a close frame that says why, rather than skipped. The
// writer sends it: a frame written here would wait for the connection's
// write lock, which the writer holds for as long as its write takes (up
// to its deadline), delaying every other client's pushes.
func (c *wsConn) push(m wsMessage) {
	select {
	case c.out <- m:
	default:
		select {
		case c.overflowed <- struct{}{}:
		default: // told already
		}
	}
}

func wsFail(format string, args ...any) wsError {
	var e wsError
	e.Error.Message = fmt.Sprintf(format, args...)
	return e
}

// wsCall answers one request.
func (a *API) wsCall(ctx context.Context, c *wsConn, req *wsRequest) any {
	var p struct {
		Height     *int           `json:"height"`
		Txid       string         `json:"txid"`
		Descriptor string         `json:"descriptor"`
		Details    string         `json:"details"`
		Tokens     string         `json:"tokens"`
		Page       int            `json:"page"`
		PageSize   int            `json:"pageSize"`
		From       int64          `json:"from"`
		To         int64          `json:"to"`
		Gap        int            `json:"gap"`
		GroupBy    uint32         `json:"groupBy"`
		Addresses  []string       `json:"addresses"`
		Confirmed  bool           `json:"confirmed"`
		Blocks     []int          `json:"blocks"`
		Specific   map[string]any `json:"specific"`
		Hex        string         `json:"hex"`
	}
	// No method takes a private key, and each would quote it
	// back in its error: a request holding one is refused unread.
	if HasPrivateKey(req.Method) || HasPrivateKey(string(req.Params)) {
		return wsFail("%s", PrivateKeyRefusal)
	}
	if len(req.Params) > 0 && string(req.Params) != "null" {
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return wsFail("params of %s: %v", req.Method, err)
		}
	}
	// The decoded parameters too: JSON's escapes can spell a key.
	if wsParamsHavePrivateKey(p.Descriptor, p.Txid, p.Addresses) {
		return wsFail("%s", PrivateKeyRefusal)
	}
	ok := func(v any, _ int, err error) any {
		if err != nil {
			return wsFail("%v", err)
		}
		return v
	}
	switch req.Method {
	case "getInfo":
		return ok(a.wsInfo(ctx))
	case "getBlockHash":
		if p.Height == nil || *p.Height < 0 {
			return wsFail("getBlockHash needs a height")
		}
		// blockHash takes a parameter that is no height for the tip.
		if *p.Height > math.MaxUint32 {
			return wsFail("Block not found, height %d is past the highest a block can have, %d", *p.Height, uint32(math.MaxUint32))
		}
		hash, code, err := a.blockHash(ctx, strconv.Itoa(*p.Height))
		return ok(map[string]string{"hash": hash}, code, err)
	case "getAccountInfo":
		q := accountQuery{page: p.Page, pageSize: p.PageSize, details: parseDetails(p.Details), tokens: p.Tokens, gap: p.Gap}
		if q.pageSize < 1 || q.pageSize > txsInAPI {
			q.pageSize = txsInAPI
		}
		q.from, q.to = uint32(max(p.From, 0)), uint32(max(p.To, 0))
		if isXpub(p.Descriptor) {
			return ok(a.xpub(a.newWork(ctx), p.Descriptor, q))
		}
		return ok(a.address(ctx, p.Descriptor, q))
	case "getAccountUtxo":
		if isXpub(p.Descriptor) {
			return ok(a.xpubUtxos(a.newWork(ctx), p.Descriptor, p.Confirmed, p.Gap))
		}
		return ok(a.addressUtxos(a.newWork(ctx), p.Descriptor, p.Confirmed))
	case "getTransaction":
		txid, err := parseTxid(p.Txid)
		if err != nil {
			return wsFail("%v", err)
		}
		return ok(a.txByID(ctx, txid, false))
	case "getTransactionSpecific":
		return ok(a.txSpecific(ctx, p.Txid))
	case "getBalanceHistory":
		groupBy := p.GroupBy
		if groupBy == 0 {
			groupBy = 3600
		}
		return ok(a.balanceHistory(a.newWork(ctx), p.Descriptor, p.From, p.To, groupBy, p.Gap))
	case "estimateFee":
		if len(p.Blocks) > feerate.MaxTarget {
			return wsFail("%d targets are more than the %d estimateFee answers at once", len(p.Blocks), feerate.MaxTarget)
		}
		v, err := a.wsEstimateFee(ctx, p.Blocks, p.Specific)
		return ok(v, 0, err)
	case "sendTransaction":
		return ok(a.sendTx(ctx, p.Hex))
	case "subscribeNewBlock":
		c.mu.Lock()
		c.newBlockID = req.ID
		c.mu.Unlock()
		return map[string]bool{"subscribed": true}
	case "unsubscribeNewBlock":
		c.mu.Lock()
		c.newBlockID = ""
		c.mu.Unlock()
		return map[string]bool{"subscribed": false}
	case "subscribeAddresses":
		if len(p.Addresses) > a.opts.WSMaxAddresses {
			return wsFail("%d addresses are over the limit of %d one connection subscribes to (--ws-max-addresses)", len(p.Addresses), a.opts.WSMaxAddresses)
		}
		addrs := make(map[string]string, len(p.Addresses))
		for _, addr := range p.Addresses {
			desc, valid := a.addrDesc(addr)
			if !valid {
				return wsFail("Invalid address %s", echoed(addr))
			}
			addrs[string(desc)] = addr
		}
		if err := a.hub.subscribe(c, req.ID, addrs, a.opts.WSMaxAddressesTotal); err != nil {
			return wsFail("%v", err)
		}
		return map[string]bool{"subscribed": true}
	case "unsubscribeAddresses":
		_ = a.hub.subscribe(c, "", map[string]string{}, a.opts.WSMaxAddressesTotal)
		return map[string]bool{"subscribed": false}
	case "ping":
		return struct{}{}
	}
	return wsFail("unknown method %s", echoed(req.Method))
}

// wsParamsHavePrivateKey reports whether a websocket request's decoded
// parameters (JSON escapes undone) hold a private key.
func wsParamsHavePrivateKey(descriptor, txid string, addresses []string) bool {
	if HasPrivateKey(descriptor) || HasPrivateKey(txid) {
		return true
	}
	for _, a := range addresses {
		if HasPrivateKey(a) {
			return true
		}
	}
	return false
}

// wsInfoJSON is Blockbook's websocket getInfo answer.
type wsInfoJSON struct {
	Name       string `json:"name"`
	Shortcut   string `json:"shortcut"`
	Decimals   int    `json:"decimals"`
	Version    string `json:"version"`
	BestHeight uint32 `json:"bestHeight"`
	BestHash   string `json:"bestHash"`
	Block0Hash string `json:"block0Hash"`
	Testnet    bool   `json:"testnet"`
}

func (a *API) wsInfo(ctx context.Context) (*wsInfoJSON, int, error) {
	params := networkParams(a.opts.Network)
	out := &wsInfoJSON{Name: coinName(a.opts.Network), Shortcut: "BTC", Decimals: 8, Version: "utxostore",
		Block0Hash: params.GenesisHash.String(), Testnet: params.Net != chaincfg.MainNetParams.Net}
	if out.Testnet {
		out.Shortcut = "TEST"
	}
	tip, ok, err := a.reads.Tip(ctx)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	if ok {
		out.BestHeight, out.BestHash = tip.Height, tip.Hash.String()
	}
	return out, http.StatusOK, nil
}

func (h *wsHub) add(c *wsConn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conns == nil {
		h.conns = map[*wsConn]struct{}{}
	}
	h.conns[c] = struct{}{}
	h.serving.Add(1)
}

// remove forgets c and its subscriptions. When c subscribed or kept a
// large message, the memory it held goes back to the system soon after.
func (h *wsHub) remove(c *wsConn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.conns, c)
	c.mu.Lock()
	subscribed := len(c.addrs)
	h.subscribed -= subscribed
	c.addrID, c.addrs = "", nil
	c.mu.Unlock()
	if (c.large || subscribed > 0) && h.release == nil {
		h.release = time.AfterFunc(time.Second, h.returnMemory)
	}
	h.serving.Done()
}

// returnMemory hands the memory the closed connections freed back to the
// system. Go's runtime keeps freed memory for reuse and returns it slowly,
// and collects no garbage while nothing allocates, so without it a burst
// of large requests would leave the daemon at its peak resident size. It
// runs at most once a second, a second after such a connection closed.
func (h *wsHub) returnMemory() {
	h.mu.Lock()
	h.release = nil
	h.mu.Unlock()
	debug.FreeOSMemory()
}

// subscribe replaces c's subscribed addresses with addrs (under the
// subscribeAddresses request id), refused when every client's together
// would pass total.
func (h *wsHub) subscribe(c *wsConn, id string, addrs map[string]string, total int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if after := h.subscribed - len(c.addrs) + len(addrs); after > total {
		return overLimit("subscribing %d addresses would take the daemon to %d, over its limit of %d for every connection together (--ws-max-addresses-total)", len(addrs), after, total)
	}
	if h.subscribed == 0 && len(addrs) > 0 {
		h.since = time.Now()
	}
	h.subscribed += len(addrs) - len(c.addrs)
	c.addrID, c.addrs = id, addrs
	return nil
}

// Close closes every websocket and waits for their handlers to return,
// and stops the mempool's pushes. An http.Server's Shutdown does not track
// the connections a websocket took over, so the daemon calls it before it
// closes the store.
func (a *API) Close() {
	a.stopMempoolPusher()
	a.hub.closeAll()
}

// closeAll closes every client's connection and waits for their handlers.
func (h *wsHub) closeAll() {
	h.each(func(c *wsConn) { c.conn.Close() })
	h.serving.Wait()
}

func (h *wsHub) each(f func(*wsConn)) {
	h.mu.Lock()
	conns := make([]*wsConn, 0, len(h.conns))
	for c := range h.conns {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	for _, c := range conns {
		f(c)
	}
}

// NotifyBlock pushes a connected block to the subscribers of new blocks,
// and each of its transactions to the subscribers of the addresses it
// touches. The daemon calls it for every block connected, whatever fed
// the block, from a queue of its own: its cost delays every subscriber's
// pushes, so the transactions are taken from the block in hand, never
// read again from the block store, and only those that touch a
// subscribed address are built.
func (a *API) NotifyBlock(ctx context.Context, b utxo.Block) {
	// The transactions first: a client that acts on the block push has
	// seen its address pushes by then. A block too large for memory comes
	// in chunks, read again from the block store.
	if a.hub.anySubscribed() {
		blockTime, err := a.blockTime(ctx, b)
		if err == nil {
			_ = b.EachChunk(func(txs []*chain.Tx) error {
				for _, tx := range txs {
					a.pushTx(ctx, tx.Msg, func() (*foundTx, error) {
						return a.inBlock(ctx, tx, b.Height, b.Hash, blockTime)
					})
				}
				return ctx.Err()
			})
		}
	}
	a.hub.each(func(c *wsConn) {
		c.mu.Lock()
		id := c.newBlockID
		c.mu.Unlock()
		if id != "" {
			c.push(wsMessage{ID: id, Data: map[string]any{"height": b.Height, "hash": b.Hash.String()}})
		}
	})
}

// blockTime is b's header time: from b, or from the store when b came
// without its header.
func (a *API) blockTime(ctx context.Context, b utxo.Block) (int64, error) {
	if b.Header != nil {
		return b.Header.Timestamp.Unix(), nil
	}
	info, _, err := a.reads.BlockAt(ctx, b.Height)
	return info.Time, err
}

// NotifyTx pushes an unmined transaction to the subscribers of the
// addresses it pays to or spends from.
func (a *API) NotifyTx(ctx context.Context, txid chainhash.Hash) {
	if !a.hub.anySubscribed() {
		return
	}
	ft, ok, err := a.findTx(ctx, txid)
	if err != nil || !ok {
		return
	}
	a.pushTx(ctx, ft.Msg, func() (*foundTx, error) { return ft, nil })
}

// pushTx pushes tx to the subscribers of the addresses it pays to or
// spends from (the inputs' from the index, or the store). found is the
// transaction with what the index and the store know of it, read only
// when a subscriber is to have it.
func (a *API) pushTx(ctx context.Context, tx *wire.MsgTx, found func() (*foundTx, error)) {
	touched := map[string]bool{}
	for _, o := range tx.TxOut {
		touched[string(index.AddrDesc(o.PkScript))] = true
	}
	if prevs, err := a.prevOutputs(ctx, tx); err == nil {
		for _, p := range prevs {
			if p != nil {
				touched[string(p.addrDesc)] = true
			}
		}
	}
	var out *txJSON
	a.hub.each(func(c *wsConn) {
		c.mu.Lock()
		id := c.addrID
		var names []string
		for desc := range touched {
			if name, ok := c.addrs[desc]; ok {
				names = append(names, name)
			}
		}
		c.mu.Unlock()
		for _, name := range names {
			if out == nil {
				ft, err := found()
				if err != nil {
					return
				}
				t, err := a.apiTx(ctx, ft, false)
				if err != nil {
					return
				}
				out = &t
			}
			c.push(wsMessage{ID: id, Data: map[string]any{"address": name, "tx": out}})
		}
	})
}

// anySubscribed says whether a client subscribes to an address.
func (h *wsHub) anySubscribed() bool {
	_, ok := h.subscribedSince()
	return ok
}

// subscribedSince is when the clients' subscriptions to addresses last
// went up from none; false while there are none.
func (h *wsHub) subscribedSince() (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.since, h.subscribed > 0
}
