package follow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/internal/setting"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// Defaults of Config.
const (
	DefaultRollbackWindow = 100
	DefaultInFlight       = 16
	DefaultMaxBackoff     = 30 * time.Second
	DefaultStallTimeout   = 2 * time.Minute
)

// Config says what to follow and where to put it.
type Config struct {
	// Peer is the node's P2P address, host:port.
	Peer string
	// Network is the store's: the peer must be a node of it.
	Network *chain.Network
	// Path carries the peer's blocks into the store and the stores derived
	// from it; it checks them first (a block that fails is the peer's
	// invalid data). It must keep the raw blocks: a reorganisation reads
	// the blocks it disconnects from its block store, whose retention must
	// be 0 (every block) or at least RollbackWindow. The peer's unconfirmed
	// transactions go to its store.
	Path *blockpath.Path
	// RollbackWindow is how many blocks below the tip can be disconnected
	// (a reorganisation, or a restart off the peer's chain).
	RollbackWindow uint32
	// InFlight is how many blocks are asked for at once during catch-up.
	InFlight int
	// MaxBackoff caps the wait between reconnections, which doubles from
	// one second after each failed connection.
	MaxBackoff time.Duration
	// StallTimeout drops a peer that sends nothing at all this long (it is
	// pinged every half of it), that leaves getheaders unanswered this
	// long, or that sends no block, nor any byte of a large one asked for,
	// this long while blocks are asked of it: a gigabyte block on a slow
	// link takes long, and is no stall while it keeps coming; the bytes
	// of a block nobody asked for are none.
	StallTimeout time.Duration
	// BanDuration is how long a peer that sent invalid data is banned: no
	// connection to it meanwhile (DefaultBanDuration when zero; a negative
	// one only drops the connection, and reconnects with backoff).
	BanDuration time.Duration
	// BanFile, when set, keeps the bans across restarts.
	BanFile string
	// Metrics, when not nil, are updated as the follower goes.
	Metrics *Metrics
	// Progress, when not nil, hears of every connected block and of the
	// first arrival at the peer's tip.
	Progress Progress
	// Logger hears of connections, bans and reorganisations
	// (slog.Default when nil).
	Logger *slog.Logger
	// StopAtTip makes Run return once the store is at the peer's tip.
	StopAtTip bool
}

// Progress hears of the follower's progress.
type Progress interface {
	// Block reports a connected block.
	Block(height uint32, txs int, size int64)
	// CaughtUp reports the first arrival at the peer's tip.
	CaughtUp()
}

// Follower keeps a store at a peer's tip.
type Follower struct {
	cfg   Config
	store *utxo.DB // the path's
	log   *slog.Logger
	// peerHeight and storeHeight are the heights as last seen; -2 until
	// the peer has answered the session's first getheaders.
	peerHeight, storeHeight atomic.Int32
	caughtUp                atomic.Bool
	// proto is the network's family's part of the protocol.
	proto *protocol
	// relays is the connected session's way in for Relay's transactions;
	// nil while none is.
	relays atomic.Pointer[relays]
	// ban is the peer's ban; nil when it has none.
	ban atomic.Pointer[Ban]
	// headersAhead is how far the peer's headers kept run past the
	// store's tip: maxHeadersAhead, less in tests of a long chain.
	headersAhead int32
}

// ErrRetentionBelowWindow is New's refusal of a block store that would
// prune blocks a reorganisation within the rollback window disconnects.
var ErrRetentionBelowWindow = errors.New("follow: the block store's retention is below the rollback window")

// New checks the configuration.
func New(cfg Config) (*Follower, error) {
	if cfg.Peer == "" || cfg.Network == nil || cfg.Path == nil {
		return nil, errors.New("follow: Peer, Network and Path are required")
	}
	blocks := cfg.Path.Blocks()
	if blocks == nil {
		return nil, errors.New("follow: the path keeps no raw blocks, which a reorganisation disconnects")
	}
	setting.Default(&cfg.RollbackWindow, DefaultRollbackWindow)
	setting.Default(&cfg.InFlight, DefaultInFlight)
	setting.Default(&cfg.MaxBackoff, DefaultMaxBackoff)
	setting.Default(&cfg.StallTimeout, DefaultStallTimeout)
	if cfg.BanDuration == 0 { // a negative one turns bans off
		cfg.BanDuration = DefaultBanDuration
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	// A reorganisation as deep as the window disconnects the newest
	// RollbackWindow blocks: the block store must still hold them.
	if keep := blocks.Retention(); keep != 0 && keep < cfg.RollbackWindow {
		return nil, fmt.Errorf("%w: it keeps the newest %d blocks, a reorganisation may disconnect %d", ErrRetentionBelowWindow, keep, cfg.RollbackWindow)
	}
	f := &Follower{cfg: cfg, store: cfg.Path.Store(), log: cfg.Logger, proto: newProtocol(cfg.Network, cfg.Path.Rules()), headersAhead: maxHeadersAhead}
	if f.log == nil {
		f.log = slog.Default()
	}
	f.forgetHeights()
	if err := f.loadBan(); err != nil {
		return nil, err
	}
	return f, nil
}

// Behind returns how many blocks the store is behind the peer; known is
// false until the peer has told its best chain, and again from the end of
// a connection until the next one's peer tells it.
func (f *Follower) Behind() (blocks uint32, known bool) {
	p, s := f.peerHeight.Load(), f.storeHeight.Load()
	if p == -2 || s == -2 {
		return 0, false
	}
	return uint32(max(p-s, 0)), true
}

// CaughtUp reports whether the store has reached the peer's tip at least
// once since Run started.
func (f *Follower) CaughtUp() bool { return f.caughtUp.Load() }

// forgetHeights makes the heights unknown: a peer no longer connected
// tells nothing of how far behind the store is (its chain moves on), and
// the daemon's readiness must not go on reporting what it last told.
func (f *Follower) forgetHeights() {
	f.peerHeight.Store(-2)
	f.storeHeight.Store(-2)
	f.cfg.Metrics.peerUnknown()
}

func (f *Follower) setHeights(peer, store int32) {
	f.peerHeight.Store(peer)
	f.storeHeight.Store(store)
	f.cfg.Metrics.heights(peer, store)
}

// fatalError ends Run: the store failed, or following the peer would need
// what the store cannot do (a fork past the rollback window).
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

func fatal(err error) error { return &fatalError{err} }

// errStoppedAtTip ends a session when Config.StopAtTip asks for it.
var errStoppedAtTip = errors.New("at the peer's tip")

// Run follows the peer until ctx ends (it returns nil then) or a fatal error. A connection
// that fails or ends is logged and followed by a reconnection after a
// backoff that doubles from one second up to MaxBackoff (back to one
// second after a connection that got through the handshake). A peer that
// sends invalid data is banned for BanDuration: Run waits for the ban to
// run out before it connects again, or, with StopAtTip, returns a
// *BannedError.
func (f *Follower) Run(ctx context.Context) error {
	backoff := time.Second
	for {
		if b, banned := f.Banned(); banned {
			bannedErr := &BannedError{Peer: f.cfg.Peer, Ban: b}
			if f.cfg.StopAtTip {
				return bannedErr
			}
			f.log.Warn(fmt.Sprintf("%v; not connecting until then", bannedErr))
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Until(b.Until)):
			}
		}
		if f.ban.Load() != nil {
			if err := f.lift(); err != nil {
				return err
			}
		}
		handshook, err := f.session(ctx)
		var fe *fatalError
		var bad *invalidDataError
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, errStoppedAtTip):
			return nil
		case errors.As(err, &fe):
			return fe.err
		}
		f.cfg.Metrics.reconnects.Inc()
		if errors.As(err, &bad) && f.cfg.BanDuration > 0 {
			if err := f.banFor(err); err != nil {
				return err
			}
			continue
		}
		if handshook {
			backoff = time.Second
		}
		f.log.Warn(fmt.Sprintf("peer %s: %v; reconnecting in %s", f.cfg.Peer, err, backoff))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, f.cfg.MaxBackoff)
	}
}

// storeTip is the store's tip height, -1 for an empty store.
func (f *Follower) storeTip(ctx context.Context) (int32, error) {
	t, ok, err := f.store.Tip(ctx)
	if err != nil || !ok {
		return -1, err
	}
	return int32(t.Height), nil
}

// classify turns a path error into what the session does about it: a
// refusal of the peer's data (a block that fails the checks, or spends a
// missing or spent output) drops the peer; a storage failure, or anything
// else, stops the follower.
func classify(err error, what string) error {
	var e *model.Error
	var check *chain.CheckError
	var parse *chain.ParseError
	if errors.As(err, &check) || errors.As(err, &parse) || (errors.As(err, &e) && !errors.Is(err, model.ErrStorage)) {
		return invalid("%s: %w", what, err)
	}
	return fatal(fmt.Errorf("%s: %w", what, err))
}
