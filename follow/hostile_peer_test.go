package follow

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/internal/peertest"
)

// TestHeadersKeptRunABoundedWayAhead: a peer that answers every getheaders
// with 2,000 more headers, each with its proof of work (at simnet's limit,
// two tries a header), and no block leaves the follower holding no more
// than maxHeadersAhead headers past the store's tip. The follower used to
// keep every header and ask for more: about a million in three seconds,
// memory growing as fast as the peer sent, and Behind reporting the store
// that many blocks behind.
func TestHeadersKeptRunABoundedWayAhead(t *testing.T) {
	var accepted, asked atomic.Int32
	addr := peertest.ServeHandshaking(t, &accepted, func(msg wire.Message, send func(wire.Message)) bool {
		if m, ok := msg.(*wire.MsgGetHeaders); ok {
			n := asked.Add(1)
			reply := wire.NewMsgHeaders()
			parent := *m.BlockLocatorHashes[0]
			for i := range wire.MaxBlockHeadersPerMsg {
				h := header(parent, chainhash.Hash{byte(i), byte(i >> 8), byte(n), byte(n >> 8)})
				_ = reply.AddBlockHeader(h)
				parent = h.BlockHash()
			}
			send(reply)
		}
		return true
	})
	f, _ := newFollower(t, addr, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := f.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if behind, _ := f.Behind(); behind > maxHeadersAhead+1 {
		t.Fatalf("after 2s the follower holds %d headers past the store's tip (%d getheaders answered), want at most %d", behind, asked.Load(), maxHeadersAhead+1)
	}
}

// TestAChainLongerThanTheHeadersKeptIsFollowedToItsTip: a follower that
// keeps four headers past the store's tip asks for the rest of the peer's
// chain as blocks connect, and reaches the peer's tip twelve blocks up.
func TestAChainLongerThanTheHeadersKeptIsFollowedToItsTip(t *testing.T) {
	bs := []*wire.MsgBlock{simnet.GenesisBlock}
	var headers []*wire.BlockHeader
	for h := byte(1); h <= 12; h++ {
		bs = append(bs, coinbaseBlock(bs[h-1].BlockHash(), h, 1))
		headers = append(headers, &bs[h].Header)
	}
	node := &peertest.Peer{Headers: func() []*wire.BlockHeader { return headers }, Blocks: blocksByHash(bs...)}
	f, store := newFollower(t, node.Listen(t), Config{StopAtTip: true})
	f.headersAhead = 4
	if err := runWithin(t, f); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if tip, _, _ := store.Tip(context.Background()); tip.Hash != bs[12].BlockHash() {
		t.Fatalf("the store's tip is %s at %d, want the peer's %s at 12", tip.Hash, tip.Height, bs[12].BlockHash())
	}
}

// TestAQuietPeerIsDropped: a peer that goes quiet after the handshake is
// dropped after the stall timeout and connected again: one that sends
// nothing at all, not even the answer to a ping (a connection that died
// without a word, as one a NAT forgets), and one that answers pings but
// never getheaders. The follower used to wait for either forever: with no
// block asked for, the stall clock never ran, and it neither pinged nor
// set a read deadline.
func TestAQuietPeerIsDropped(t *testing.T) {
	for _, c := range []struct {
		name   string
		pongs  bool
		reason string
	}{
		{"silent", false, "nor answered a ping"},
		{"answering pings, not getheaders", true, "left getheaders unanswered"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var accepted atomic.Int32
			addr := peertest.ServeHandshaking(t, &accepted, func(msg wire.Message, send func(wire.Message)) bool {
				if m, ok := msg.(*wire.MsgPing); ok && c.pongs {
					send(wire.NewMsgPong(m.Nonce))
				}
				return true
			})
			logged := make(chan string, 100)
			f, _ := newFollower(t, addr, Config{StallTimeout: 200 * time.Millisecond, MaxBackoff: 10 * time.Millisecond, Logger: slog.New(lineHandler{logged})})
			waitForLogLine(t, f, logged, 10*time.Second, "the peer was not dropped for "+c.reason, func(line string) bool {
				return strings.Contains(line, c.reason) && strings.Contains(line, "reconnecting")
			})
		})
	}
}

// waitForLogLine runs f until one of its log lines (logged, which its
// logger writes) is what want looks for, failing the test with the log
// after within. f stops when the test ends, before the peer's cleanup,
// which waits for the connection to end.
func waitForLogLine(t *testing.T, f *Follower, logged <-chan string, within time.Duration, what string, want func(line string) bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	deadline := time.After(within)
	var lines []string
	for {
		select {
		case line := <-logged:
			lines = append(lines, line)
			if want(line) {
				return
			}
		case <-deadline:
			t.Fatalf("%s within %s; the log:\n%s", what, within, strings.Join(lines, "\n"))
		}
	}
}

// TestAStopEndsAHandshakeTheNodeDoesNotAnswer: a follower stopped while
// the peer has accepted the connection and said nothing returns at once,
// not when the handshake's timeout (handshakeTimeout) runs out: a sync
// interrupted there used to go on for another half minute.
func TestAStopEndsAHandshakeTheNodeDoesNotAnswer(t *testing.T) {
	addr, connected := peertest.ServeSilent(t)
	f, _ := newFollower(t, addr, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	<-connected
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run stopped during the handshake: %v, want nil", err)
		}
	case <-time.After(handshakeTimeout / 2):
		t.Fatalf("Run still in the handshake %s after the stop", handshakeTimeout/2)
	}
}
