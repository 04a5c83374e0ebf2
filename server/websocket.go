package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/gorilla/websocket"

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
}

type wsError struct {
	Error struct {
		Message string `json:"message"`
	} `json:"error"`
}

// wsConn is one client: its outgoing queue and its subscriptions.
type wsConn struct {
	conn *websocket.Conn
	out  chan wsMessage

	mu         sync.Mutex
	newBlockID string            // "" when not subscribed
	addrID     string            // the subscribeAddresses request's id
	addrs      map[string]string // addrDesc -> the address as the client named it
}

// wsHub is every connected client, for the pushes.
type wsHub struct {
	mu      sync.Mutex
	conns   map[*wsConn]struct{}
	serving sync.WaitGroup // the handlers running
}

// wsQueue bounds what waits to be written to one client; a client that
// falls that far behind is disconnected rather than buffered without end.
const wsQueue = 256

var upgrader = websocket.Upgrader{
	// Blockbook answers any origin: the API is public and read-only.
	CheckOrigin: func(*http.Request) bool { return true },
}

func (s *Server) handleWebsocket(w http.ResponseWriter, r *http.Request) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered the request
	}
	c := &wsConn{conn: conn, out: make(chan wsMessage, wsQueue), addrs: map[string]string{}}
	s.bb.hub.add(c)
	defer s.bb.hub.remove(c)
	conn.SetReadLimit(s.opts.MaxBody)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case m := <-c.out:
				_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
				if conn.WriteJSON(m) != nil {
					conn.Close()
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	defer func() { cancel(); <-done; conn.Close() }()
	for {
		// The request's read deadline outlives the upgrade; a client must
		// send something (Blockbook's clients ping) within the idle timeout.
		_ = conn.SetReadDeadline(time.Now().Add(s.opts.IdleTimeout))
		var req wsRequest
		if err := conn.ReadJSON(&req); err != nil {
			return
		}
		data := s.wsCall(ctx, c, &req)
		if !c.send(wsMessage{ID: req.ID, Data: data}) {
			return
		}
	}
}

// send queues m; false when the client is too far behind.
func (c *wsConn) send(m wsMessage) bool {
	select {
	case c.out <- m:
		return true
	default:
		return false
	}
}

func wsFail(format string, args ...any) wsError {
	var e wsError
	e.Error.Message = sprintf(format, args...)
	return e
}

// wsCall answers one request.
func (s *Server) wsCall(ctx context.Context, c *wsConn, req *wsRequest) any {
	var p struct {
		Height     *int     `json:"height"`
		Txid       string   `json:"txid"`
		Descriptor string   `json:"descriptor"`
		Details    string   `json:"details"`
		Tokens     string   `json:"tokens"`
		Page       int      `json:"page"`
		PageSize   int      `json:"pageSize"`
		From       int64    `json:"from"`
		To         int64    `json:"to"`
		Gap        int      `json:"gap"`
		GroupBy    uint32   `json:"groupBy"`
		Addresses  []string `json:"addresses"`
		Confirmed  bool     `json:"confirmed"`
	}
	if len(req.Params) > 0 && string(req.Params) != "null" {
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return wsFail("params of %s: %v", req.Method, err)
		}
	}
	ok := func(v any, _ int, err error) any {
		if err != nil {
			return wsFail("%v", err)
		}
		return v
	}
	switch req.Method {
	case "getInfo":
		return ok(s.wsInfo(ctx))
	case "getBlockHash":
		if p.Height == nil || *p.Height < 0 {
			return wsFail("getBlockHash needs a height")
		}
		hash, code, err := s.blockHash(ctx, strconv.Itoa(*p.Height))
		return ok(map[string]string{"hash": hash}, code, err)
	case "getAccountInfo":
		q := accountQuery{page: p.Page, pageSize: p.PageSize, details: parseDetails(p.Details), tokens: p.Tokens, gap: p.Gap}
		if q.pageSize < 1 || q.pageSize > txsInAPI {
			q.pageSize = txsInAPI
		}
		q.from, q.to = uint32(max(p.From, 0)), uint32(max(p.To, 0))
		if isXpub(p.Descriptor) {
			return ok(s.xpub(ctx, p.Descriptor, q))
		}
		return ok(s.address(ctx, p.Descriptor, q))
	case "getAccountUtxo":
		if isXpub(p.Descriptor) {
			return ok(s.xpubUtxos(ctx, p.Descriptor, p.Confirmed, p.Gap))
		}
		return ok(s.addressUtxos(ctx, p.Descriptor, p.Confirmed))
	case "getTransaction":
		txid, err := parseTxid(p.Txid)
		if err != nil {
			return wsFail("%v", err)
		}
		return ok(s.txByID(ctx, txid, false))
	case "getTransactionSpecific":
		return ok(s.txSpecific(ctx, p.Txid))
	case "getBalanceHistory":
		groupBy := p.GroupBy
		if groupBy == 0 {
			groupBy = 3600
		}
		return ok(s.balanceHistory(ctx, p.Descriptor, p.From, p.To, groupBy, p.Gap))
	case "estimateFee":
		return wsFail("%s", noNode)
	case "sendTransaction":
		return wsFail("%s", noNode)
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
		addrs := map[string]string{}
		for _, a := range p.Addresses {
			desc, valid := s.addrDesc(a)
			if !valid {
				return wsFail("Invalid address %s", echoed(a))
			}
			addrs[string(desc)] = a
		}
		c.mu.Lock()
		c.addrID, c.addrs = req.ID, addrs
		c.mu.Unlock()
		return map[string]bool{"subscribed": true}
	case "unsubscribeAddresses":
		c.mu.Lock()
		c.addrID, c.addrs = "", map[string]string{}
		c.mu.Unlock()
		return map[string]bool{"subscribed": false}
	case "ping":
		return struct{}{}
	}
	return wsFail("unknown method %s", echoed(req.Method))
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

func (s *Server) wsInfo(ctx context.Context) (*wsInfoJSON, int, error) {
	params := networkParams(s.opts.Network)
	out := &wsInfoJSON{Name: coinName(s.opts.Network), Shortcut: "BTC", Decimals: 8, Version: "utxostore",
		Block0Hash: params.GenesisHash.String(), Testnet: params.Net != chaincfg.MainNetParams.Net}
	if out.Testnet {
		out.Shortcut = "TEST"
	}
	tip, ok, err := s.backend.Tip(ctx)
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

func (h *wsHub) remove(c *wsConn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.conns, c)
	h.serving.Done()
}

// closeAll closes every client's connection: Shutdown does not track
// hijacked connections, so the daemon closes them before the store.
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
// touches. The daemon calls it for every block it connects; a follower
// that connects blocks itself calls it too.
func (s *Server) NotifyBlock(ctx context.Context, b utxo.Block) {
	// The transactions first: a client that acts on the block push has
	// seen its address pushes by then.
	for _, tx := range b.Txs {
		s.NotifyTx(ctx, tx.ID)
	}
	s.bb.hub.each(func(c *wsConn) {
		c.mu.Lock()
		id := c.newBlockID
		c.mu.Unlock()
		if id != "" {
			c.send(wsMessage{ID: id, Data: map[string]any{"height": b.Height, "hash": b.Hash.String()}})
		}
	})
}

// NotifyTx pushes a transaction (mined or not) to the subscribers of the
// addresses it pays to or spends from.
func (s *Server) NotifyTx(ctx context.Context, txid chainhash.Hash) {
	var subscribed bool
	s.bb.hub.each(func(c *wsConn) {
		c.mu.Lock()
		subscribed = subscribed || len(c.addrs) > 0
		c.mu.Unlock()
	})
	if !subscribed {
		return
	}
	ft, ok, err := s.findTx(ctx, txid)
	if err != nil || !ok {
		return
	}
	touched := map[string]bool{}
	for _, o := range ft.Msg.TxOut {
		touched[string(index.AddrDesc(o.PkScript))] = true
	}
	if prevs, err := s.prevOutputs(ctx, ft.Msg); err == nil {
		for _, p := range prevs {
			if p != nil {
				touched[string(p.addrDesc)] = true
			}
		}
	}
	var tx *txJSON
	s.bb.hub.each(func(c *wsConn) {
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
			if tx == nil {
				t, err := s.apiTx(ctx, ft, false)
				if err != nil {
					return
				}
				tx = &t
			}
			c.send(wsMessage{ID: id, Data: map[string]any{"address": name, "tx": tx}})
		}
	})
}
