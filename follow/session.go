package follow

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/peer"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo/model"
)

// session is one connection to the peer. Every message the peer sends is
// handled in order on the goroutine of session.run, the only one that
// writes to the store.
type session struct {
	f     *Follower
	p     *peer.Peer
	chain *peerChain
	// locatorOrder is the store's locator, highest block first.
	locatorOrder []chainhash.Hash
	// answered is set by the first headers message: until then the peer's
	// chain is not known and nothing is connected.
	answered bool
	// unconnected counts headers messages in a row whose parent was
	// unknown; a peer that keeps sending them is dropped.
	unconnected int
	requested   map[chainhash.Hash]time.Time // blocks asked for
	received    map[chainhash.Hash]*chain.Block
	atTip       bool
	txAsked     map[chainhash.Hash]bool
	// unkept are the store's own blocks asked of the peer, by their
	// heights: those a reorganisation disconnects that the block store
	// does not hold, and those a derived store lacks.
	unkept map[chainhash.Hash]uint32
}

// blockMsg is a block with the bytes it came in.
type blockMsg struct {
	msg *wire.MsgBlock
	raw []byte
}

type verAck struct{}

// maxTxAsked bounds the set of transactions asked for; it is cleared when
// full (a transaction asked for twice is stored once).
const maxTxAsked = 100_000

// session connects, follows the peer until the connection ends, and says
// whether the handshake got through.
func (f *Follower) session(ctx context.Context) (handshook bool, err error) {
	events := make(chan any, 64)
	done := make(chan struct{})
	defer close(done)
	deliver := func(ev any) {
		select {
		case events <- ev:
		case <-done:
		}
	}
	// undecodable is a message from the peer that did not decode; the
	// peer package drops the connection on it, and the session says why.
	var undecodable atomic.Pointer[error]
	cfg := &peer.Config{
		UserAgentName:    "utxostore",
		UserAgentVersion: "0.1",
		ChainParams:      f.cfg.Params,
		NewestBlock: func() (*chainhash.Hash, int32, error) {
			t, ok, err := f.store.Tip(context.Background())
			if err != nil {
				return nil, 0, err
			}
			if !ok {
				return f.cfg.Params.GenesisHash, 0, nil
			}
			return &t.Hash, int32(t.Height), nil
		},
		Listeners: peer.MessageListeners{
			OnVerAck:   func(*peer.Peer, *wire.MsgVerAck) { deliver(verAck{}) },
			OnHeaders:  func(_ *peer.Peer, m *wire.MsgHeaders) { deliver(m) },
			OnInv:      func(_ *peer.Peer, m *wire.MsgInv) { deliver(m) },
			OnBlock:    func(_ *peer.Peer, m *wire.MsgBlock, raw []byte) { deliver(blockMsg{m, raw}) },
			OnTx:       func(_ *peer.Peer, m *wire.MsgTx) { deliver(m) },
			OnNotFound: func(_ *peer.Peer, m *wire.MsgNotFound) { deliver(m) },
			OnRead: func(_ *peer.Peer, _ int, _ wire.Message, err error) {
				if isDecodeError(err) {
					undecodable.Store(&err)
				}
			},
			OnReject: func(_ *peer.Peer, m *wire.MsgReject) {
				f.log.Warn(fmt.Sprintf("peer %s rejected our %s: %s (%s)", f.cfg.Peer, m.Cmd, m.Reason, m.Code))
			},
		},
	}
	p, err := peer.NewOutboundPeer(cfg, f.cfg.Peer)
	if err != nil {
		return false, fatal(fmt.Errorf("peer address %q: %w", f.cfg.Peer, err))
	}
	conn, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, "tcp", f.cfg.Peer)
	if err != nil {
		return false, err
	}
	p.AssociateConnection(conn)
	gone := make(chan struct{})
	go func() { p.WaitForDisconnect(); close(gone) }()
	defer func() { p.Disconnect(); <-gone }()

	outbox := make(chan *wire.MsgTx, 16)
	defer f.outbox.Store(nil)
	s := &session{f: f, p: p, requested: map[chainhash.Hash]time.Time{}, received: map[chainhash.Hash]*chain.Block{}, txAsked: map[chainhash.Hash]bool{}, unkept: map[chainhash.Hash]uint32{}}
	stall := time.NewTicker(max(f.cfg.StallTimeout/10, 100*time.Millisecond))
	defer stall.Stop()
	for {
		select {
		case <-ctx.Done():
			return handshook, nil
		case <-gone:
			if err := undecodable.Load(); err != nil {
				return handshook, invalid("a message that does not decode (%v) ended the connection", *err)
			}
			if !handshook {
				return false, errors.New("the connection ended before the handshake completed (another network, or the peer refused us)")
			}
			return true, errors.New("the peer closed the connection")
		case ev := <-events:
			if _, ok := ev.(verAck); ok {
				handshook = true
				f.outbox.Store(&outbox)
				f.log.Info(fmt.Sprintf("connected to peer %s (%s, height %d)", f.cfg.Peer, p.UserAgent(), p.LastBlock()))
			}
			if err := s.handle(ctx, ev); err != nil {
				return handshook, err
			}
		case tx := <-outbox:
			p.QueueMessage(tx, nil)
		case now := <-stall.C:
			for hash, asked := range s.requested {
				if now.Sub(asked) > f.cfg.StallTimeout {
					return handshook, fmt.Errorf("the peer did not send block %s within %s of being asked", hash, f.cfg.StallTimeout)
				}
			}
		}
	}
}

// isDecodeError tells a message that did not decode from the end of the
// connection (and from an unknown command, which the peer package skips).
func isDecodeError(err error) bool {
	var msgErr *wire.MessageError
	return err != nil && errors.As(err, &msgErr)
}

func (s *session) handle(ctx context.Context, ev any) error {
	switch m := ev.(type) {
	case verAck:
		return s.start(ctx)
	case *wire.MsgHeaders:
		return s.onHeaders(ctx, m)
	case *wire.MsgInv:
		s.onInv(m)
	case blockMsg:
		return s.onBlock(ctx, m)
	case *wire.MsgTx:
		return s.onTx(ctx, m)
	case *wire.MsgNotFound:
		for _, iv := range m.InvList {
			if height, ok := s.unkept[iv.Hash]; ok {
				return fatal(fmt.Errorf("the store's block %s at height %d is needed (to disconnect it, or for a store derived from the store that lacks it), but the block store does not hold it and the peer does not have it; import the node's chain into a new store", iv.Hash, height))
			}
			if _, asked := s.requested[iv.Hash]; asked {
				return fmt.Errorf("the peer does not have block %s, which its headers named", iv.Hash)
			}
			delete(s.txAsked, iv.Hash) // evicted or mined since its inv
		}
	}
	return nil
}

// start asks for the peer's chain from the store's tip, and for
// announcements as headers.
func (s *session) start(ctx context.Context) error {
	tip, err := s.f.storeTip(ctx)
	if err != nil {
		return fatal(err)
	}
	locator, heights, err := s.f.locator(ctx, tip)
	if err != nil {
		return fatal(err)
	}
	s.chain = newPeerChain(tip, locator, heights, *s.f.cfg.Params.GenesisHash)
	s.locatorOrder = locator
	s.p.QueueMessage(wire.NewMsgSendHeaders(), nil)
	s.askHeaders()
	return nil
}

// locator lists the store's blocks from its tip back to genesis: the last
// ten, then at doubling steps (as Bitcoin's block locator does). A store
// loaded from a snapshot knows no block below the snapshot's, its lowest.
func (f *Follower) locator(ctx context.Context, tip int32) ([]chainhash.Hash, []int32, error) {
	if tip < 0 {
		return []chainhash.Hash{*f.cfg.Params.GenesisHash}, []int32{0}, nil
	}
	chainSum, err := f.store.ChainSummary(ctx)
	if err != nil {
		return nil, nil, err
	}
	lowest := min(int32(chainSum.First), tip)
	var hashes []chainhash.Hash
	var heights []int32
	step := int32(1)
	for h := tip; ; {
		info, ok, err := f.store.BlockAt(ctx, uint32(h))
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			return nil, nil, fmt.Errorf("the store has no block at height %d, below its tip at %d", h, tip)
		}
		hashes = append(hashes, info.Hash)
		heights = append(heights, h)
		if h == lowest {
			return hashes, heights, nil
		}
		if len(hashes) >= 10 {
			step *= 2
		}
		h = max(h-step, lowest)
	}
}

// askHeaders sends getheaders with a locator of the peer's chain as known,
// then the store's blocks below it.
func (s *session) askHeaders() {
	msg := wire.NewMsgGetHeaders()
	step := int32(1)
	for h := s.chain.tip(); h > s.chain.base; h -= step {
		hash := s.chain.at(h)
		if err := msg.AddBlockLocatorHash(&hash); err != nil {
			break
		}
		if len(msg.BlockLocatorHashes) >= 10 {
			step *= 2
		}
	}
	for _, hash := range s.locatorOrder {
		if _, still := s.chain.locator[hash]; !still {
			continue
		}
		if err := msg.AddBlockLocatorHash(&hash); err != nil {
			break
		}
	}
	s.p.QueueMessage(msg, nil)
}

func (s *session) onHeaders(ctx context.Context, m *wire.MsgHeaders) error {
	if s.chain == nil {
		return nil // before the handshake: nothing asked yet
	}
	s.answered = true
	if len(m.Headers) == 0 {
		return s.advance(ctx)
	}
	if _, err := s.chain.attach(m.Headers); err != nil {
		if !errors.Is(err, errUnknownParent) {
			return invalid("%w", err)
		}
		// An announcement of a block on a branch not yet known: ask for
		// the branch. A peer whose answers never connect is dropped, not
		// banned: while it reorganises, a healthy peer announces its new
		// branch's blocks faster than it answers, and the streak cannot
		// tell those announcements from answers.
		if s.unconnected++; s.unconnected > 3 {
			return fmt.Errorf("%w, %d times in a row", err, s.unconnected)
		}
		s.askHeaders()
		return nil
	}
	s.unconnected = 0
	if len(m.Headers) == wire.MaxBlockHeadersPerMsg {
		s.askHeaders() // the rest of the peer's chain
	}
	return s.advance(ctx)
}

func (s *session) onInv(m *wire.MsgInv) {
	if s.chain == nil {
		return
	}
	getData := wire.NewMsgGetData()
	newBlock := false
	for _, iv := range m.InvList {
		switch iv.Type {
		case wire.InvTypeBlock, wire.InvTypeWitnessBlock:
			if _, known := s.chain.heights[iv.Hash]; !known {
				newBlock = true
			}
		case wire.InvTypeTx, wire.InvTypeWitnessTx:
			// During catch-up the peer's transactions would spend outputs
			// the store does not have yet; the mempool is asked for at the tip.
			if !s.atTip || s.txAsked[iv.Hash] {
				continue
			}
			if len(s.txAsked) >= maxTxAsked {
				clear(s.txAsked)
			}
			s.txAsked[iv.Hash] = true
			hash := iv.Hash
			_ = getData.AddInvVect(wire.NewInvVect(wire.InvTypeTx, &hash))
		}
	}
	if len(getData.InvList) > 0 {
		s.p.QueueMessage(getData, nil)
	}
	if newBlock {
		s.askHeaders()
	}
}

func (s *session) onBlock(ctx context.Context, m blockMsg) error {
	hash := m.msg.BlockHash()
	if _, asked := s.requested[hash]; !asked {
		s.f.log.Info(fmt.Sprintf("peer %s sent block %s, which was not asked for; ignored", s.f.cfg.Peer, hash))
		return nil
	}
	delete(s.requested, hash)
	b, err := chain.ParseBlock(m.raw)
	if err != nil {
		return invalid("block %s does not parse: %w", hash, err)
	}
	if b.Hash != hash {
		return invalid("block %s parses as %s", hash, b.Hash)
	}
	s.received[hash] = b
	return s.advance(ctx)
}

func (s *session) onTx(ctx context.Context, m *wire.MsgTx) error {
	tx, err := chain.ParseTx(chain.SerializeTx(m))
	if err != nil {
		return invalid("transaction %s does not parse: %w", m.TxHash(), err)
	}
	if !s.txAsked[tx.ID] {
		return nil // not asked for, or asked before a reconnection
	}
	err = s.f.applyUnmined(ctx, tx)
	s.f.cfg.Metrics.mempoolTx(err)
	switch {
	case err == nil, errors.Is(err, model.ErrTxExists):
		return nil
	case errors.Is(err, model.ErrStorage):
		return fatal(fmt.Errorf("storing unconfirmed transaction %s: %w", tx.ID, err))
	default:
		s.f.log.Info(fmt.Sprintf("unconfirmed transaction %s from peer %s refused: %v", tx.ID, s.f.cfg.Peer, err))
		return nil
	}
}

// advance moves the store along the peer's chain as far as the blocks
// received allow, and asks for the next ones. The path names the next
// height it needs: the store's next block, or, while a store derived from
// it lacks some of its blocks (a crash under --sync block, an index turned
// on later), the first of those, which the peer sends again.
func (s *session) advance(ctx context.Context) error {
	for s.answered {
		tip, err := s.f.storeTip(ctx)
		if err != nil {
			return fatal(err)
		}
		s.f.setHeights(s.chain.tip(), tip)
		fork, err := s.forkPoint(ctx, tip)
		if err != nil {
			return fatal(err)
		}
		next, err := s.f.cfg.Path.Next(ctx)
		if err != nil {
			return fatal(err)
		}
		height := int32(next)
		// Derived stores that lack blocks below the fork point get them
		// first: the branch goes on from there.
		if fork < tip && height > fork {
			moved, err := s.reorg(ctx, tip, fork)
			if err != nil || !moved {
				return err
			}
			continue
		}
		if height > tip && tip >= s.chain.tip() {
			return s.reachedTip(ctx)
		}
		hash, err := s.hashAt(ctx, height)
		if err != nil {
			return fatal(err)
		}
		if err := s.request(ctx, height); err != nil { // keeps InFlight blocks coming while this one connects
			return fatal(err)
		}
		b := s.received[hash]
		if b == nil {
			return nil
		}
		if err := s.connect(ctx, height, b); err != nil {
			return err
		}
	}
	return nil
}

// hashAt is the hash of the block at height on the peer's chain: up to the
// chain's base that is the store's block, which the peer's chain shares.
func (s *session) hashAt(ctx context.Context, height int32) (chainhash.Hash, error) {
	if height > s.chain.base {
		return s.chain.at(height), nil
	}
	info, ok, err := s.f.store.BlockAt(ctx, uint32(height))
	if err != nil {
		return chainhash.Hash{}, err
	}
	if !ok {
		return chainhash.Hash{}, fmt.Errorf("the store has no block at height %d, below the peer chain's base at %d", height, s.chain.base)
	}
	if _, asked := s.requested[info.Hash]; !asked && s.received[info.Hash] == nil {
		s.unkept[info.Hash] = uint32(height)
	}
	return info.Hash, nil
}

// forkPoint is the height of the last block the store's chain shares with
// the peer's, at most tip.
func (s *session) forkPoint(ctx context.Context, tip int32) (int32, error) {
	h := min(tip, s.chain.tip())
	for ; h > s.chain.base; h-- {
		info, ok, err := s.f.store.BlockAt(ctx, uint32(h))
		if err != nil {
			return 0, err
		}
		if ok && info.Hash == s.chain.at(h) {
			break
		}
	}
	return h, nil
}

// request asks for the blocks of the peer's chain from height from, as many
// as InFlight allows.
func (s *session) request(ctx context.Context, from int32) error {
	getData := wire.NewMsgGetData()
	for h := from; h <= s.chain.tip() && len(s.requested) < s.f.cfg.InFlight; h++ {
		hash, err := s.hashAt(ctx, h)
		if err != nil {
			return err
		}
		if _, asked := s.requested[hash]; asked || s.received[hash] != nil {
			continue
		}
		_ = getData.AddInvVect(wire.NewInvVect(wire.InvTypeBlock, &hash))
		s.requested[hash] = time.Now()
	}
	if len(getData.InvList) > 0 {
		s.p.QueueMessage(getData, nil)
	}
	return nil
}

// connect carries the block at height along the path, on top of the
// store's tip (or to a store derived from it that lacks it).
func (s *session) connect(ctx context.Context, height int32, b *chain.Block) error {
	if err := s.f.cfg.Path.Connect(ctx, b, uint32(height)); err != nil {
		return classify(err, fmt.Sprintf("block %s at height %d", b.Hash, height))
	}
	delete(s.received, b.Hash)
	delete(s.unkept, b.Hash)
	if p := s.f.cfg.Progress; p != nil && !s.atTip {
		p.Block(uint32(height), len(b.Txs), b.Size)
	}
	return nil
}

// reorg moves the store from its tip to the peer's branch that forks at
// height fork, in one Path.Reorg call, once the branch's blocks up to one
// past the store's tip (or the peer's tip, if lower) are here. It reports
// whether the store moved.
func (s *session) reorg(ctx context.Context, tip, fork int32) (bool, error) {
	window := int32(s.f.cfg.RollbackWindow)
	if tip-fork > window {
		return false, fatal(fmt.Errorf("the store's tip at height %d is not on the peer's chain, which forks from it at height %d, %d blocks back: past the rollback window of %d blocks; import the node's chain into a new store, or follow a node on the store's chain",
			tip, fork, tip-fork, window))
	}
	var connect []*chain.Block
	for h := fork + 1; h <= min(s.chain.tip(), tip+1); h++ {
		b := s.received[s.chain.at(h)]
		if b == nil {
			if err := s.request(ctx, fork+1); err != nil {
				return false, fatal(err)
			}
			return false, nil
		}
		connect = append(connect, b)
	}
	disconnect, complete, err := s.disconnected(ctx, tip, fork)
	if err != nil || !complete {
		return false, err
	}
	if err := s.f.cfg.Path.Reorg(ctx, disconnect, connect); err != nil {
		return false, classify(err, fmt.Sprintf("reorganising to the peer's branch from height %d", fork+1))
	}
	for _, b := range disconnect {
		delete(s.received, b.Hash)
		delete(s.unkept, b.Hash)
	}
	for _, b := range connect {
		delete(s.received, b.Hash)
	}
	s.f.cfg.Metrics.reorg(len(disconnect))
	newTip := fork + int32(len(connect))
	s.f.log.Info(fmt.Sprintf("reorganised to the peer's branch: %d blocks disconnected, %d connected from height %d; tip %s at height %d",
		len(disconnect), len(connect), fork+1, s.chain.at(newTip), newTip))
	return true, nil
}

// disconnected returns the store's blocks from its tip down to the one
// above fork, as a reorganisation disconnects them, from the block store;
// the ones it does not hold are asked of the peer, and complete is false
// until they are here.
func (s *session) disconnected(ctx context.Context, tip, fork int32) (blocks []*chain.Block, complete bool, err error) {
	complete = true
	getData := wire.NewMsgGetData()
	for h := tip; h > fork; h-- {
		b, ok, err := s.f.cfg.Path.Kept(ctx, uint32(h))
		if err != nil {
			return nil, false, fatal(err)
		}
		if ok {
			blocks = append(blocks, b)
			continue
		}
		info, _, err := s.f.store.BlockAt(ctx, uint32(h))
		if err != nil {
			return nil, false, fatal(err)
		}
		if received := s.received[info.Hash]; received != nil {
			blocks = append(blocks, received)
			continue
		}
		complete = false
		if _, asked := s.requested[info.Hash]; !asked {
			hash := info.Hash
			_ = getData.AddInvVect(wire.NewInvVect(wire.InvTypeBlock, &hash))
			s.requested[hash] = time.Now()
			s.unkept[hash] = uint32(h)
		}
	}
	if len(getData.InvList) > 0 {
		s.p.QueueMessage(getData, nil)
	}
	return blocks, complete, nil
}

// reachedTip marks the arrival at the peer's tip: from here on its
// transactions are followed, starting with its whole mempool when it
// serves one.
func (s *session) reachedTip(ctx context.Context) error {
	if !s.atTip {
		s.atTip = true
		if !s.f.caughtUp.Swap(true) && s.f.cfg.Progress != nil {
			s.f.cfg.Progress.CaughtUp() // the bar's last line, before the log's
		}
		if t, ok, err := s.f.store.Tip(ctx); err == nil && ok {
			s.f.log.Info(fmt.Sprintf("at the peer's tip: block %s at height %d", t.Hash, t.Height))
		}
		if s.p.Services()&wire.SFNodeBloom != 0 {
			s.p.QueueMessage(wire.NewMsgMemPool(), nil)
		}
	}
	if s.f.cfg.StopAtTip {
		return errStoppedAtTip
	}
	unmined, err := s.f.store.QueryOldUnminedTransactions(ctx, ^uint32(0))
	if err != nil {
		return fatal(fmt.Errorf("counting unmined transactions: %w", err))
	}
	s.f.cfg.Metrics.unmined.Set(float64(len(unmined)))
	return nil
}
