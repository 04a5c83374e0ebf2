package electrum

import (
	"context"
	"time"

	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/utxo"
)

// NotifyBlock tells the server of a block connected (also those of a
// reorganisation): its subscribers hear of the new tip and of every
// status the block changed. The daemon has the block path call it
// (blockpath.Path.OnConnect).
func (s *Server) NotifyBlock(_ context.Context, b utxo.Block) {
	s.hashes.dropFrom(b.Height)
	s.mu.Lock()
	s.blockSeen = true
	s.mu.Unlock()
	s.poke()
}

// poke wakes the notifier.
func (s *Server) poke() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// notifier sends the notifications: on a block, the new tip to the
// headers subscribers and every changed status; on a change of the
// mempool (looked for every pollEvery, as any writer may change it), the
// changed statuses of the script hashes its new and gone transactions
// touch.
func (s *Server) notifier() {
	defer s.wg.Done()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var last *mempoolView
	lastChanges := s.reads.Changes()
	for {
		select {
		case <-s.closed:
			return
		case <-s.changed:
		case <-tick.C:
			if s.reads.Changes() == lastChanges {
				continue
			}
		}
		lastChanges = s.reads.Changes()
		s.mu.Lock()
		block := s.blockSeen
		s.blockSeen = false
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.RequestTimeout)
		last = s.notify(ctx, block, last)
		cancel()
	}
}

// notify sends what changed since the view prev; it returns the view it
// compared against.
func (s *Server) notify(ctx context.Context, block bool, prev *mempoolView) *mempoolView {
	v, err := s.mempool(ctx)
	if err != nil {
		s.log.Warn("electrum: reading the mempool for notifications", "error", err)
		return prev
	}
	var touched map[index.ScriptHash]bool // nil: every subscription
	if !block && prev != nil {
		touched = map[index.ScriptHash]bool{}
		for id, t := range v.txs {
			if prev.txs[id] == nil {
				for _, sh := range t.touches() {
					touched[sh] = true
				}
			}
		}
		for id, t := range prev.txs {
			if v.txs[id] == nil {
				for _, sh := range t.touches() {
					touched[sh] = true
				}
			}
		}
	}
	var tip *headerNotice
	if block {
		if height, err := s.tip(ctx); err == nil {
			if raw, _, err := s.header(ctx, height); err == nil {
				tip = &headerNotice{Hex: hexOf(raw), Height: height}
			}
		}
	}
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	statuses := map[index.ScriptHash]string{}
	for _, c := range conns {
		if tip != nil {
			c.notifyTip(ctx, tip)
		}
		c.mu.Lock()
		var check []index.ScriptHash
		for sh := range c.subs {
			if touched == nil || touched[sh] {
				check = append(check, sh)
			}
		}
		c.mu.Unlock()
		for _, sh := range check {
			st, ok := statuses[sh]
			if !ok {
				got, err := s.statusOf(ctx, sh)
				if err != nil {
					continue // over a limit: its subscriber learnt so when subscribing
				}
				st = statusKey(got)
				statuses[sh] = st
			}
			c.mu.Lock()
			old, subscribed := c.subs[sh]
			if subscribed && old != st {
				c.subs[sh] = st
			}
			c.mu.Unlock()
			if subscribed && old != st {
				var param any
				if st != "" {
					param = st
				}
				c.send(notification{JSONRPC: "2.0", Method: "blockchain.scripthash.subscribe", Params: []any{scriptHashString(sh), param}})
			}
		}
	}
	return v
}

type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  []any  `json:"params"`
}

// notifyTip sends the new tip to a headers subscriber that has not seen
// it.
func (c *conn) notifyTip(ctx context.Context, tip *headerNotice) {
	raw, _ := unhex(tip.Hex)
	hash := blockHashOf(raw)
	c.mu.Lock()
	send := c.headers && c.tipSent != hash
	if send {
		c.tipSent = hash
	}
	c.mu.Unlock()
	if send {
		c.send(notification{JSONRPC: "2.0", Method: "blockchain.headers.subscribe", Params: []any{tip}})
	}
}
