package follow

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo/model"
)

// session is one connection to the peer. Every message the peer sends is
// handled in order on the goroutine of session.run, the only one that
// writes to the store.
type session struct {
	f     *Follower
	c     *conn
	chain *peerChain
	// locatorOrder is the store's locator, highest block first.
	locatorOrder []chainhash.Hash
	// answered is set by the first headers message: until then the peer's
	// chain is not known and nothing is connected.
	answered bool
	// unconnected counts headers messages in a row whose parent was
	// unknown; a peer that keeps sending them is dropped.
	unconnected int
	// moreHeaders says that the peer's chain goes on past the headers
	// kept: its last answer was full, or ran past maxHeadersAhead.
	moreHeaders bool
	// headersAskedAt is when getheaders was sent, zero once headers came.
	headersAskedAt time.Time
	// pingedAt is when the peer was last pinged.
	pingedAt  time.Time
	requested map[chainhash.Hash]time.Time // blocks asked for
	received  map[chainhash.Hash]blockMsg
	// progressAt is when the peer last sent a block, or was asked for one
	// while none was outstanding: the stall clock.
	progressAt time.Time
	atTip      bool
	txAsked    map[chainhash.Hash]bool
	// unkept are the store's own blocks asked of the peer, by their
	// heights: those a reorganisation disconnects that the block store
	// does not hold, and those a derived store lacks.
	unkept map[chainhash.Hash]uint32
	// own and top say which chain the store follows, as advance last
	// found it: the blocks up to height own are the store's, those above
	// it up to top the peer's. Unless the peer's chain is ahead of the
	// store's, that is the store's chain to its tip.
	own, top int32
}

// maxTxAsked bounds the set of transactions asked for; it is cleared when
// full (a transaction asked for twice is stored once).
const maxTxAsked = 100_000

// maxHeadersAhead bounds how far the peer's headers kept run past the
// store's tip (Follower.headersAhead): the rest of its chain is asked for
// as blocks connect. Four answers to getheaders keep far more blocks ahead
// than are asked for at once, and a peer's chain of any length, real or
// not, costs the follower no more memory than they do.
const maxHeadersAhead = 4 * wire.MaxBlockHeadersPerMsg

// session connects, follows the peer until the connection ends, and says
// whether the handshake got through.
func (f *Follower) session(ctx context.Context) (handshook bool, err error) {
	tip, err := f.storeTip(ctx)
	if err != nil {
		return false, fatal(err)
	}
	c, err := dial(ctx, f.cfg.Peer, f.proto, f.cfg.Path.Blocks(), max(tip, 0))
	if err != nil {
		if errors.Is(err, ErrOtherChain) {
			return false, fatal(err)
		}
		return false, err
	}
	events := make(chan any, 64)
	done := make(chan struct{})
	deliver := func(ev any) bool {
		select {
		case events <- ev:
			return true
		case <-done:
			return false
		}
	}
	gone := make(chan struct{})
	go func() { c.readLoop(deliver); close(gone) }()
	s := &session{f: f, c: c, requested: map[chainhash.Hash]time.Time{}, received: map[chainhash.Hash]blockMsg{}, txAsked: map[chainhash.Hash]bool{}, unkept: map[chainhash.Hash]uint32{}}
	defer func() {
		f.forgetHeights()
		close(done)
		c.close()
		<-gone
		for _, b := range s.received {
			b.discard()
		}
		for {
			select {
			case ev := <-events:
				if b, ok := ev.(blockMsg); ok {
					b.discard()
				}
			default:
				return
			}
		}
	}()

	in := &relays{txs: make(chan relay), ended: make(chan struct{})}
	f.relays.Store(in)
	defer func() { f.relays.Store(nil); close(in.ended) }()
	f.log.Info(fmt.Sprintf("connected to peer %s (%s, height %d)", f.cfg.Peer, c.peer.UserAgent, c.peer.LastBlock))
	// The first ping goes before anything is asked, so that a peer
	// silent from the start has left a ping unanswered at least as long
	// as anything else (stalled reports the ping first).
	if err := s.ping(time.Now()); err != nil {
		return true, err
	}
	if err := s.start(ctx); err != nil {
		return true, err
	}
	stall := time.NewTicker(max(f.cfg.StallTimeout/10, 100*time.Millisecond))
	defer stall.Stop()
	for {
		select {
		case <-ctx.Done():
			return true, nil
		case ev := <-events:
			if err, ended := ev.(error); ended {
				if isInvalid(err) {
					return true, err
				}
				return true, fmt.Errorf("the connection ended: %w", err)
			}
			if err := s.handle(ctx, ev); err != nil {
				return true, err
			}
		case r := <-in.txs:
			err := c.sendRaw(wire.CmdTx, r.tx.Raw)
			if err != nil {
				err = fmt.Errorf("sending transaction %s to the peer: %w", r.tx.ID, err)
			}
			r.sent <- err
			if err != nil {
				return true, err
			}
		case now := <-stall.C:
			if len(events) > 0 {
				continue // what the peer sent is handled first: no stall
			}
			if err := s.stalled(now); err != nil {
				return true, err
			}
			if err := s.ping(now); err != nil {
				return true, err
			}
		}
	}
}

// send sends a message to the peer; a failure ends the session.
func (s *session) send(msg wire.Message) error {
	if err := s.c.send(msg); err != nil {
		return fmt.Errorf("sending %s to the peer: %w", msg.Command(), err)
	}
	return nil
}

func (s *session) handle(ctx context.Context, ev any) error {
	switch m := ev.(type) {
	case *wire.MsgHeaders:
		return s.onHeaders(ctx, m)
	case *wire.MsgInv:
		return s.onInv(m)
	case blockMsg:
		return s.onBlock(ctx, m)
	case txMsg:
		return s.onTx(ctx, m.tx)
	case *wire.MsgReject:
		s.f.log.Warn(fmt.Sprintf("peer %s rejected our %s: %s (%s)", s.f.cfg.Peer, m.Cmd, m.Reason, m.Code))
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
	s.chain = newPeerChain(tip, locator, heights, s.f.cfg.Network.Params)
	s.locatorOrder = locator
	if s.c.pver >= wire.SendHeadersVersion {
		if err := s.send(wire.NewMsgSendHeaders()); err != nil {
			return err
		}
	}
	return s.askHeaders()
}

// locator lists the store's blocks from its tip back to genesis: the last
// ten, then at doubling steps (as Bitcoin's block locator does). A store
// loaded from a snapshot knows no block below the snapshot's, its lowest.
func (f *Follower) locator(ctx context.Context, tip int32) ([]chainhash.Hash, []int32, error) {
	if tip < 0 {
		return []chainhash.Hash{*f.cfg.Network.Params.GenesisHash}, []int32{0}, nil
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
func (s *session) askHeaders() error {
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
	s.headersAskedAt = time.Now()
	return s.send(msg)
}

// askMoreHeaders asks for the rest of the peer's chain once the headers
// kept run no more than half the bound past the store's tip, and none are
// awaited.
func (s *session) askMoreHeaders(tip int32) error {
	if !s.moreHeaders || !s.headersAskedAt.IsZero() || s.chain.tip()-tip > s.f.headersAhead/2 {
		return nil
	}
	return s.askHeaders()
}

func (s *session) onHeaders(ctx context.Context, m *wire.MsgHeaders) error {
	if s.chain == nil {
		return nil // before the handshake: nothing asked yet
	}
	s.answered = true
	s.headersAskedAt = time.Time{}
	s.moreHeaders = len(m.Headers) == wire.MaxBlockHeadersPerMsg
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
		return s.askHeaders()
	}
	s.unconnected = 0
	tip, err := s.f.storeTip(ctx)
	if err != nil {
		return fatal(err)
	}
	if limit := max(tip, s.chain.base) + s.f.headersAhead; s.chain.tip() > limit {
		s.chain.cut(limit)
		s.moreHeaders = true
	}
	if split := s.f.cfg.Network.Split; split != nil && split.Height > s.chain.base && split.Height <= s.chain.tip() {
		if err := s.f.proto.splitCheck(s.f.cfg.Peer, split.Height, s.chain.at(split.Height)); err != nil {
			return fatal(err)
		}
	}
	return s.advance(ctx)
}

func (s *session) onInv(m *wire.MsgInv) error {
	if s.chain == nil {
		return nil
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
			_ = getData.AddInvVect(wire.NewInvVect(s.f.proto.txInv, &hash))
		}
	}
	if len(getData.InvList) > 0 {
		if err := s.send(getData); err != nil {
			return err
		}
	}
	if newBlock {
		return s.askHeaders()
	}
	return nil
}

// stalled is the error that drops a peer that has gone quiet: one that
// sent nothing at all for StallTimeout, not even the answer to a ping sent
// over half of it ago (a connection dead without a word, which no read
// ever reports); one that left getheaders unanswered for StallTimeout;
// or one that has sent no block, nor any byte of one, for StallTimeout
// while blocks are asked of it: a large block that keeps arriving,
// however long it takes, is no stall. Only the bytes of a block asked for
// count: a peer trickling one nobody asked for would otherwise hold the
// session forever.
func (s *session) stalled(now time.Time) error {
	timeout := s.f.cfg.StallTimeout
	blockBytesAt := s.askedBlockBytesAt()
	heard := time.Unix(0, max(s.c.heardAt.Load(), blockBytesAt))
	if heard.Before(s.pingedAt) && now.Sub(s.pingedAt) > timeout/2 && now.Sub(heard) > timeout {
		return fmt.Errorf("the peer sent nothing for %s, nor answered a ping sent %s ago", now.Sub(heard).Round(time.Millisecond), now.Sub(s.pingedAt).Round(time.Millisecond))
	}
	if !s.headersAskedAt.IsZero() && now.Sub(s.headersAskedAt) > timeout {
		return fmt.Errorf("the peer left getheaders unanswered for %s", now.Sub(s.headersAskedAt).Round(time.Millisecond))
	}
	if len(s.requested) == 0 {
		return nil
	}
	last := s.progressAt
	if blockBytesAt != 0 && time.Unix(0, blockBytesAt).After(last) {
		last = time.Unix(0, blockBytesAt)
	}
	if now.Sub(last) <= timeout {
		return nil
	}
	var oldest chainhash.Hash
	var oldestAt time.Time
	for hash, asked := range s.requested {
		if oldestAt.IsZero() || asked.Before(oldestAt) {
			oldest, oldestAt = hash, asked
		}
	}
	return fmt.Errorf("the peer sent no block for %s while blocks were asked of it (block %s, asked %s ago)", timeout, oldest, now.Sub(oldestAt).Round(time.Millisecond))
}

// askedBlockBytesAt is when bytes of the block message being staged last
// arrived (Unix nanoseconds), if its block was asked for; 0 otherwise.
func (s *session) askedBlockBytesAt() int64 {
	b := s.c.staging.Load()
	if b == nil {
		return 0
	}
	if _, asked := s.requested[b.hash]; !asked {
		return 0
	}
	return b.bytesAt.Load()
}

// ping pings the peer every half StallTimeout while it answers, so that
// a live peer with nothing to send answers, and a dead connection shows
// (stalled).
func (s *session) ping(now time.Time) error {
	if now.Sub(s.pingedAt) < s.f.cfg.StallTimeout/2 {
		return nil
	}
	if !s.pingedAt.IsZero() && s.c.heardAt.Load() < s.pingedAt.UnixNano() {
		return nil // the last ping is unanswered: its age is what stalled reads
	}
	s.pingedAt = now
	return s.send(wire.NewMsgPing(rand.Uint64()))
}

// ask records a block asked for, starting the stall clock when none was
// outstanding.
func (s *session) ask(hash chainhash.Hash) {
	now := time.Now()
	if len(s.requested) == 0 {
		s.progressAt = now
	}
	s.requested[hash] = now
}

func (s *session) onBlock(ctx context.Context, m blockMsg) error {
	hash := m.hash()
	if _, asked := s.requested[hash]; !asked {
		s.f.log.Info(fmt.Sprintf("peer %s sent block %s, which was not asked for; ignored", s.f.cfg.Peer, hash))
		m.discard()
		return nil
	}
	delete(s.requested, hash)
	s.progressAt = time.Now()
	s.received[hash] = m
	return s.advance(ctx)
}

func (s *session) onTx(ctx context.Context, tx *chain.Tx) error {
	if !s.txAsked[tx.ID] {
		return nil // not asked for, or asked before a reconnection
	}
	err := s.f.applyUnmined(ctx, tx)
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
		if err := s.askMoreHeaders(tip); err != nil {
			return err
		}
		fork, err := s.forkPoint(ctx, tip)
		if err != nil {
			return fatal(err)
		}
		ahead, err := s.ahead(ctx, tip, fork)
		if err != nil {
			return fatal(err)
		}
		s.own, s.top = s.chain.base, s.chain.tip()
		if !ahead {
			s.own, s.top = tip, tip
		}
		s.f.setHeights(s.top, tip)
		next, err := s.f.cfg.Path.Next(ctx)
		if err != nil {
			return fatal(err)
		}
		height := int32(next)
		// Derived stores that lack blocks below the fork point get them
		// first: the branch goes on from there.
		if ahead && fork < tip && height > fork {
			moved, err := s.reorg(ctx, tip, fork)
			if err != nil || !moved {
				return err
			}
			continue
		}
		if height > tip && tip >= s.top {
			if s.moreHeaders {
				return nil // at the last header kept: more are asked for
			}
			return s.reachedTip(ctx)
		}
		hash, err := s.hashAt(ctx, height)
		if err != nil {
			return fatal(err)
		}
		if err := s.request(ctx, height); err != nil { // keeps InFlight blocks coming while this one connects
			return fatal(err)
		}
		b, ok := s.received[hash]
		if !ok {
			return nil
		}
		if err := s.connect(ctx, height, b); err != nil {
			return err
		}
	}
	return nil
}

// hashAt is the hash of the block at height on the chain the store
// follows: up to own that is the store's block, above it the peer's.
func (s *session) hashAt(ctx context.Context, height int32) (chainhash.Hash, error) {
	if height > s.own {
		return s.chain.at(height), nil
	}
	info, ok, err := s.f.store.BlockAt(ctx, uint32(height))
	if err != nil {
		return chainhash.Hash{}, err
	}
	if !ok {
		return chainhash.Hash{}, fmt.Errorf("the store has no block at height %d, which its chain holds up to %d", height, s.own)
	}
	if _, asked := s.requested[info.Hash]; !asked && !s.isReceived(info.Hash) {
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

// ahead reports whether the peer's chain is ahead of the store's, which
// it leaves at height fork: whether it goes on from the store's tip, or
// its branch above fork has more chain work than the store's blocks above
// it. A branch with no more work (a peer behind the store on its chain,
// whose branch is empty, or a shorter or lighter branch) is no reason to
// disconnect anything: a node would not reorganise onto it either. The
// store's work is summed from its tip down, only until it reaches the
// branch's.
func (s *session) ahead(ctx context.Context, tip, fork int32) (bool, error) {
	if fork == tip {
		return true, nil
	}
	branch, ours := s.chain.workAbove(fork), new(big.Int)
	for h := tip; h > fork && ours.Cmp(branch) < 0; h-- {
		info, ok, err := s.f.store.BlockAt(ctx, uint32(h))
		if err != nil {
			return false, err
		}
		if !ok {
			return false, fmt.Errorf("the store has no block at height %d, below its tip at %d", h, tip)
		}
		ours.Add(ours, blockchain.CalcWork(info.Bits))
	}
	return branch.Cmp(ours) > 0, nil
}

// request asks for the blocks of the chain the store follows from height
// from, as many as InFlight allows.
func (s *session) request(ctx context.Context, from int32) error {
	getData := wire.NewMsgGetData()
	for h := from; h <= s.top && len(s.requested) < s.f.cfg.InFlight; h++ {
		hash, err := s.hashAt(ctx, h)
		if err != nil {
			return err
		}
		if _, asked := s.requested[hash]; asked || s.isReceived(hash) {
			continue
		}
		_ = getData.AddInvVect(wire.NewInvVect(s.f.proto.blockInv, &hash))
		s.ask(hash)
	}
	if len(getData.InvList) > 0 {
		return s.send(getData)
	}
	return nil
}

func (s *session) isReceived(hash chainhash.Hash) bool {
	_, ok := s.received[hash]
	return ok
}

// connect carries the block at height along the path, on top of the
// store's tip (or to a store derived from it that lacks it): a block held
// in memory, or one staged in the block store (which the path keeps or
// discards).
func (s *session) connect(ctx context.Context, height int32, b blockMsg) error {
	delete(s.received, b.hash())
	txs, size := b.counts()
	var err error
	if b.staged != nil {
		err = s.f.cfg.Path.ConnectStaged(ctx, b.staged, uint32(height))
	} else {
		err = s.f.cfg.Path.Connect(ctx, b.block, uint32(height))
	}
	if err != nil {
		return classify(err, fmt.Sprintf("block %s at height %d", b.hash(), height))
	}
	delete(s.unkept, b.hash())
	if p := s.f.cfg.Progress; p != nil && !s.atTip {
		p.Block(uint32(height), txs, size)
	}
	return nil
}

// reorg moves the store from its tip to the peer's branch that forks at
// height fork, which has more work than the store's blocks above it
// (ahead), in one Path.Reorg call, once the branch's blocks up to one
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
		m, ok := s.received[s.chain.at(h)]
		if !ok {
			if err := s.request(ctx, fork+1); err != nil {
				return false, fatal(err)
			}
			return false, nil
		}
		b, err := m.whole()
		if err != nil {
			return false, fatal(err)
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
		s.received[b.Hash].discard()
		delete(s.received, b.Hash)
		delete(s.unkept, b.Hash)
	}
	for _, b := range connect {
		s.received[b.Hash].discard()
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
		if received, ok := s.received[info.Hash]; ok {
			b, err := received.whole()
			if err != nil {
				return nil, false, fatal(err)
			}
			blocks = append(blocks, b)
			continue
		}
		complete = false
		if _, asked := s.requested[info.Hash]; !asked {
			hash := info.Hash
			_ = getData.AddInvVect(wire.NewInvVect(s.f.proto.blockInv, &hash))
			s.ask(hash)
			s.unkept[hash] = uint32(h)
		}
	}
	if len(getData.InvList) > 0 {
		if err := s.send(getData); err != nil {
			return nil, false, err
		}
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
		if s.c.peer.Services&wire.SFNodeBloom != 0 {
			if err := s.send(wire.NewMsgMemPool()); err != nil {
				return err
			}
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
