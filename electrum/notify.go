package electrum

import (
	"context"
	"errors"
	"time"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/utxo"
)

// NotifyBlock tells the server of a block connected (also those of a
// reorganisation): its subscribers hear of the new tip and of every
// status the block changed. The daemon has the block path call it
// (blockpath.Path.OnConnect), once the index holds the block.
func (s *Server) NotifyBlock(ctx context.Context, b utxo.Block) {
	s.hashes.dropFrom(b.Height)
	s.mu.Lock()
	extends := s.lastBlock != nil && *s.lastBlock == b.PrevHash
	hash := b.Hash
	s.lastBlock = &hash
	s.mu.Unlock()
	t := &blockTouch{all: !extends}
	if extends && s.subsTotal.Load() > 0 {
		t = s.touchedBy(ctx, b)
	}
	s.mu.Lock()
	s.pending = s.pending.merge(t)
	s.mu.Unlock()
	s.poke()
}

// blockTouch is what connected blocks changed: the scripts their outputs
// pay (by hash) and the address descriptors their inputs spend from; all
// when that is unknown (a reorganisation, whose disconnected blocks the
// server does not see, or a block it could not read).
type blockTouch struct {
	all  bool
	sh   map[index.ScriptHash]bool
	desc map[string]bool
}

func (t *blockTouch) merge(u *blockTouch) *blockTouch {
	if t == nil {
		return u
	}
	if t.all || u.all {
		return &blockTouch{all: true}
	}
	for sh := range u.sh {
		t.sh[sh] = true
	}
	for d := range u.desc {
		t.desc[d] = true
	}
	return t
}

// touches reports whether the script hash's status may have changed; desc
// is its script's address descriptor, nil when no output has paid it.
func (t *blockTouch) touches(sh index.ScriptHash, desc []byte) bool {
	return t.all || t.sh[sh] || desc != nil && t.desc[string(desc)]
}

// touchedBy reads what a block touches: its outputs' scripts, and the
// address descriptors of the outputs its inputs spend, from the index.
func (s *Server) touchedBy(ctx context.Context, b utxo.Block) *blockTouch {
	t := &blockTouch{sh: map[index.ScriptHash]bool{}, desc: map[string]bool{}}
	idx := s.reads.AddressIndex()
	err := b.EachChunk(func(txs []*chain.Tx) error {
		for _, tx := range txs {
			for _, o := range tx.Msg.TxOut {
				t.sh[index.HashScript(o.PkScript)] = true
			}
			if tx.IsCoinbase() {
				continue
			}
			for _, in := range tx.Msg.TxIn {
				if idx == nil {
					return errNoIndex
				}
				ta, ok, err := idx.TxAddresses(in.PreviousOutPoint.Hash)
				if err != nil {
					return err
				}
				if !ok || int(in.PreviousOutPoint.Index) >= len(ta.Outputs) {
					return errNoIndex
				}
				t.desc[string(ta.Outputs[in.PreviousOutPoint.Index].AddrDesc)] = true
			}
		}
		return ctx.Err()
	})
	if err != nil {
		return &blockTouch{all: true}
	}
	return t
}

// errNoIndex stops reading a block whose spent outputs the index lacks.
var errNoIndex = errors.New("the index does not hold a spent output")

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
		touch := s.pending
		s.pending = nil
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.RequestTimeout)
		last = s.notify(ctx, touch, last)
		cancel()
	}
}

// notify sends what changed since the view prev: after blocks (touch
// not nil) the new tip and the statuses they touched, and the statuses
// the mempool's new and gone transactions touched. It returns the view it
// compared against.
func (s *Server) notify(ctx context.Context, touch *blockTouch, prev *mempoolView) *mempoolView {
	v, err := s.mempool(ctx)
	if err != nil {
		s.log.Warn("electrum: reading the mempool for notifications", "error", err)
		return prev
	}
	changed := &blockTouch{sh: map[index.ScriptHash]bool{}, desc: map[string]bool{}, all: prev == nil}
	if touch != nil {
		changed = changed.merge(touch)
	}
	if prev != nil && !changed.all {
		for id, t := range v.txs {
			if prev.txs[id] == nil {
				for _, sh := range t.touches() {
					changed.sh[sh] = true
				}
			}
		}
		for id, t := range prev.txs {
			if v.txs[id] == nil {
				for _, sh := range t.touches() {
					changed.sh[sh] = true
				}
			}
		}
	}
	var tip *headerNotice
	if touch != nil {
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
		subs := make([]index.ScriptHash, 0, len(c.subs))
		for sh := range c.subs {
			subs = append(subs, sh)
		}
		c.mu.Unlock()
		var check []index.ScriptHash
		for _, sh := range subs {
			if changed.all || changed.sh[sh] {
				check = append(check, sh)
				continue
			}
			if len(changed.desc) > 0 {
				if sc, ok, err := s.lookup(sh); err == nil && ok && changed.touches(sh, sc.desc) {
					check = append(check, sh)
				}
			}
		}
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
