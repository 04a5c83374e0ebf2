package follow

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/utxostore/utxostore/blob"
	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/internal/svpeer"
	"github.com/utxostore/utxostore/internal/testlog"
	"github.com/utxostore/utxostore/utxo"
)

// svFollower is a follower of the Bitcoin SV peer at addr on bsv-regtest,
// over a fresh memory store.
func svFollower(t *testing.T, addr string, cfg Config) (*Follower, *utxo.DB) {
	t.Helper()
	blobs, err := blob.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store, err := utxo.Open(context.Background(), memory.New(), utxo.Options{Network: svpeer.Network, Blobs: blobs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	rules, err := chain.NetworkRules(svpeer.Network, false)
	if err != nil {
		t.Fatal(err)
	}
	path, err := blockpath.Open(context.Background(), blockpath.Config{Store: store, Rules: rules, Blocks: blockStore(t), Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Peer, cfg.Network, cfg.Path, cfg.Logger = addr, network(t, svpeer.Network), path, testlog.Logger(t)
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f, store
}

// A large block that takes five times the stall timeout to arrive, its
// bytes coming all along, is followed to the peer's tip without a
// reconnection; a peer that withholds it is dropped for the stall and
// connected again.
func TestStallIsSilenceNotSlowness(t *testing.T) {
	c := svpeer.Build(t, t.TempDir(), 5<<20, 25_000)
	large, height := c.Tip()
	const timeout = 300 * time.Millisecond
	slow := &svpeer.Peer{Chain: c, Pace: 5 * timeout / time.Duration(large.Size>>16)}
	f, store := svFollower(t, slow.Listen(t), Config{StopAtTip: true, StallTimeout: timeout})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	if err := f.Run(ctx); err != nil {
		t.Fatal(err)
	}
	tip, ok, err := store.Tip(ctx)
	if err != nil || !ok || tip.Hash != large.Hash {
		t.Fatalf("the store's tip is %s at %d (%v), want the peer's %s at %d", tip.Hash, tip.Height, err, large.Hash, height)
	}
	if took := time.Since(start); took < 3*timeout || slow.Connections() != 1 {
		t.Fatalf("the block took %s over %d connections; want one connection, over three times the stall timeout of %s", took, slow.Connections(), timeout)
	}

	withheld := &svpeer.Peer{Chain: c, Faults: map[int32]svpeer.Fault{height: svpeer.Withheld}}
	f, _ = svFollower(t, withheld.Listen(t), Config{StallTimeout: timeout, MaxBackoff: 10 * time.Millisecond})
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	deadline := time.Now().Add(time.Minute)
	for withheld.Connections() < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // polling the peer's count, not a synchronisation
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := testutil.ToFloat64(f.cfg.Metrics.reconnects); n < 1 || withheld.Connections() < 2 {
		t.Fatalf("a peer withholding the block: %v reconnections, %d connections", n, withheld.Connections())
	}
}

// TestAPeerTricklingABlockNobodyAskedForIsDropped: a peer that, asked for
// blocks, trickles a large block nobody asked for instead (64 KiB every
// 100ms, 8 seconds for the block) is dropped at the stall timeout. The
// bytes of any block being staged used to count as progress, so such a
// peer held the session as long as it kept trickling.
func TestAPeerTricklingABlockNobodyAskedForIsDropped(t *testing.T) {
	c := svpeer.Build(t, t.TempDir(), 5<<20, 25_000)
	_, height := c.Tip()
	const timeout = 300 * time.Millisecond
	trickling := &svpeer.Peer{Chain: c, Unasked: height, Pace: 100 * time.Millisecond}
	logged := make(chan string, 100)
	f, _ := svFollower(t, trickling.Listen(t), Config{StallTimeout: timeout, MaxBackoff: 10 * time.Millisecond})
	f.log = slog.New(lineHandler{logged})
	waitForLogLine(t, f, logged, 10*timeout, "the peer trickling an unasked block was not dropped (ten stall timeouts)", func(line string) bool {
		return strings.Contains(line, "reconnecting")
	})
}
