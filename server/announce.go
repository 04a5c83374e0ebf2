package server

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/utxostore/utxostore/utxo"
)

// Bounds of the blocks waiting for their announcement: about a minute of
// a fast initial sync's blocks, and the memory of a few large ones.
const (
	maxAnnounceBlocks = 64
	maxAnnounceBytes  = 64 << 20
)

// announcer hands connected and disconnected blocks to the subscribers'
// notifiers (Blockbook's websocket, Electrum) from a goroutine of its
// own, in the order the block path passed them. The block path calls it
// with its lock held, and a notifier reads the store and the index for
// every transaction a subscriber may care about: run there, one client's
// subscription would hold every block back.
//
// When the notifiers fall behind by more than the bounds above (an
// initial sync with subscribers connected), the oldest waiting blocks are
// dropped: the newest is always announced, Electrum then reads every
// subscribed status again (it sees the gap), and Blockbook's websocket
// pushes no transaction of a dropped block, as Blockbook pushes none
// while it syncs.
type announcer struct {
	notify func(ctx context.Context, b utxo.Block, disconnected bool)
	log    *slog.Logger
	// timeout bounds one block's announcement, so a read that hangs
	// delays the blocks after it rather than stopping them.
	timeout time.Duration

	mu      sync.Mutex
	waiting []announcement
	bytes   int64
	dropped int

	wake    chan struct{}
	stopped chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc
}

// announcement is a block connected, or disconnected.
type announcement struct {
	block        utxo.Block
	disconnected bool
}

func newAnnouncer(log *slog.Logger, timeout time.Duration, notify func(ctx context.Context, b utxo.Block, disconnected bool)) *announcer {
	ctx, cancel := context.WithCancel(context.Background())
	a := &announcer{notify: notify, log: log, timeout: timeout, wake: make(chan struct{}, 1), stopped: make(chan struct{}), ctx: ctx, cancel: cancel}
	go a.run()
	return a
}

// add queues a block connected or disconnected; it never waits.
func (a *announcer) add(b utxo.Block, disconnected bool) {
	a.mu.Lock()
	a.waiting = append(a.waiting, announcement{b, disconnected})
	a.bytes += int64(b.Size)
	for len(a.waiting) > 1 && (len(a.waiting) > maxAnnounceBlocks || a.bytes > maxAnnounceBytes) {
		a.bytes -= int64(a.waiting[0].block.Size)
		a.waiting[0] = announcement{}
		a.waiting = a.waiting[1:]
		a.dropped++
	}
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *announcer) run() {
	defer close(a.stopped)
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-a.wake:
		}
		for {
			a.mu.Lock()
			if len(a.waiting) == 0 {
				a.mu.Unlock()
				break
			}
			next := a.waiting[0]
			a.waiting[0] = announcement{}
			a.waiting = a.waiting[1:]
			a.bytes -= int64(next.block.Size)
			dropped := a.dropped
			a.dropped = 0
			a.mu.Unlock()
			if dropped > 0 {
				a.log.Warn("the subscribers' notifications fell behind the blocks; the oldest were not announced",
					"blocks_dropped", dropped, "next_height", next.block.Height)
			}
			ctx, cancel := context.WithTimeout(a.ctx, a.timeout)
			a.notify(ctx, next.block, next.disconnected)
			cancel()
			if a.ctx.Err() != nil {
				return
			}
		}
	}
}

// stop ends the announcements, abandoning those waiting.
func (a *announcer) stop() {
	a.cancel()
	<-a.stopped
}
