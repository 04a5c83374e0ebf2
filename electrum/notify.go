package electrum

import (
	"context"
	"errors"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/index"
	"github.com/utxostore/utxostore/utxo"
)

// NotifyBlock tells the server of a block connected (also those of a
// reorganisation): its subscribers hear of the new tip and of every
// status the block changed. The daemon has the block path call it
// (blockpath.Path.OnConnect), once the index holds the block.
func (s *Server) NotifyBlock(ctx context.Context, b utxo.Block) {
	s.tipMoved(ctx, b, b.PrevHash, b.Hash)
}

// NotifyDisconnect tells the server of a block disconnected (by a
// reorganisation): its subscribers hear of the statuses the block had
// changed, and the blocks connected next go on from the one below it.
// The daemon has the block path call it (blockpath.Path.OnDisconnect),
// once the index no longer holds the block.
func (s *Server) NotifyDisconnect(ctx context.Context, b utxo.Block) {
	s.tipMoved(ctx, b, b.Hash, b.PrevHash)
}

// tipMoved notes that block b moved the chain's tip from the block from
// to the block to, one way or the other. When from is the last tip the
// server heard of, the statuses b touches are read again; otherwise it
// missed a block, and every subscribed status is.
func (s *Server) tipMoved(ctx context.Context, b utxo.Block, from, to chainhash.Hash) {
	s.hashes.dropFrom(b.Height)
	s.mu.Lock()
	follows := s.lastBlock != nil && *s.lastBlock == from
	s.lastBlock = &to
	s.mu.Unlock()
	t := &blockTouch{all: !follows}
	if follows && s.subsTotal.Load() > 0 {
		t = s.touchedBy(ctx, b)
	}
	s.mu.Lock()
	s.pending = s.pending.merge(t)
	s.mu.Unlock()
	s.poke()
}

// blockTouch is what connected or disconnected blocks changed: the
// scripts their outputs pay (by hash) and the address descriptors their
// inputs spend from; all when that is unknown (a block the server did not
// hear of, or could not read).
type blockTouch struct {
	all  bool
	sh   map[index.ScriptHash]bool
	desc map[string]bool
}

func (t *blockTouch) merge(u *blockTouch) *blockTouch {
	if t == nil {
		return u
	}
	if u == nil {
		return t
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
// address descriptors of the outputs its inputs spend, from the index. An
// output of the block itself is among its outputs already, and is not
// looked up (a disconnected block's are no longer in the index).
func (s *Server) touchedBy(ctx context.Context, b utxo.Block) *blockTouch {
	t := &blockTouch{sh: map[index.ScriptHash]bool{}, desc: map[string]bool{}}
	idx := s.reads.AddressIndex()
	inBlock := map[chainhash.Hash]bool{}
	err := b.EachChunk(func(txs []*chain.Tx) error {
		for _, tx := range txs {
			inBlock[tx.ID] = true
			for _, o := range tx.Msg.TxOut {
				t.sh[index.HashScript(o.PkScript)] = true
			}
			if tx.IsCoinbase() {
				continue
			}
			for _, in := range tx.Msg.TxIn {
				if inBlock[in.PreviousOutPoint.Hash] {
					continue
				}
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
// touch. What a round could not read (a status whose history read failed
// or ran out of time, the mempool, the tip) goes back to pending and is
// tried again a pollEvery later, so a subscriber is not left with a
// status the server no longer means to send.
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
			if s.reads.Changes() == lastChanges && !s.hasPending() {
				continue
			}
		}
		lastChanges = s.reads.Changes()
		s.mu.Lock()
		touch := s.pending
		s.pending = nil
		s.mu.Unlock()
		var retry *blockTouch
		last, retry = s.notify(touch, last)
		if retry != nil {
			s.mu.Lock()
			s.pending = retry.merge(s.pending)
			s.mu.Unlock()
		}
	}
}

func (s *Server) hasPending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending != nil
}

// bounded is the context of one read of a notification round: each is
// bounded as a request is, so a round with many statuses to read (a
// hostile client can subscribe to many busy script hashes) delays the
// later ones but does not make them fail.
func (s *Server) bounded() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.opts.RequestTimeout)
}

// notify sends what changed since the view prev: after blocks (touch
// not nil) the new tip and the statuses they touched, and the statuses
// the mempool's new and gone transactions touched. It returns the view it
// compared against, and what it could not read to try again (nil when
// it read everything).
func (s *Server) notify(touch *blockTouch, prev *mempoolView) (*mempoolView, *blockTouch) {
	ctx, cancel := s.bounded()
	v, err := s.mempool(ctx)
	cancel()
	if err != nil {
		s.log.Warn("electrum: reading the mempool for notifications; trying again", "error", err)
		return prev, (&blockTouch{sh: map[index.ScriptHash]bool{}, desc: map[string]bool{}}).merge(touch)
	}
	retry := &blockTouch{sh: map[index.ScriptHash]bool{}, desc: map[string]bool{}}
	failed := false
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
		var err error
		if tip, err = s.tipNotice(); err != nil {
			s.log.Warn("electrum: reading the tip for notifications; trying again", "error", err)
			failed = true
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
			c.notifyTip(tip)
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
				sc, ok, err := s.lookup(sh)
				switch {
				case transient(err):
					retry.sh[sh], failed = true, true
				case err == nil && ok && changed.touches(sh, sc.desc):
					check = append(check, sh)
				}
			}
		}
		for _, sh := range check {
			st, ok := statuses[sh]
			if !ok {
				ctx, cancel := s.bounded()
				got, err := s.statusOf(ctx, sh)
				cancel()
				s.metrics.statusReads.Inc()
				if transient(err) {
					retry.sh[sh], failed = true, true
					continue
				}
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
	if !failed {
		return v, nil
	}
	if n := len(retry.sh); n > 0 {
		s.log.Warn("electrum: reading statuses for notifications; trying again", "script_hashes", n)
	}
	return v, retry
}

// transient is a read's failure that may pass (an index read that failed
// or ran out of time), as against a refusal the client is told of (a
// status over a limit), which reading again would only repeat.
func transient(err error) bool {
	var refused *rpcError
	return err != nil && !errors.As(err, &refused)
}

// tipNotice is the tip as blockchain.headers.subscribe announces it.
func (s *Server) tipNotice() (*headerNotice, error) {
	ctx, cancel := s.bounded()
	defer cancel()
	height, err := s.tip(ctx)
	if err != nil {
		return nil, err
	}
	raw, _, err := s.header(ctx, height)
	if err != nil {
		return nil, err
	}
	return &headerNotice{Hex: hexOf(raw), Height: height}, nil
}

type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  []any  `json:"params"`
}

// notifyTip sends the new tip to a headers subscriber that has not seen
// it.
func (c *conn) notifyTip(tip *headerNotice) {
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
