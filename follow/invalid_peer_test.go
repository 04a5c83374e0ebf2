package follow

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"math"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/utxostore/utxostore/blockpath"
	"github.com/utxostore/utxostore/blockstore"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/internal/peertest"
	"github.com/utxostore/utxostore/internal/testlog"
	"github.com/utxostore/utxostore/utxo"
)

var simnet = &chaincfg.SimNetParams

// simnetNetwork is simnet as a store names it.
var simnetNetwork = func() *chain.Network {
	n, err := chain.LookupNetwork("simnet")
	if err != nil {
		panic(err)
	}
	return n
}()

// header is a header on top of prev, told apart by merkle.
func header(prev chainhash.Hash, merkle chainhash.Hash) *wire.BlockHeader {
	return peertest.Header(prev, merkle)
}

// blockSpendingNothing is block 1 with a transaction that spends an output
// no block created.
func blockSpendingNothing() *wire.MsgBlock {
	coinbase := wire.NewMsgTx(1)
	coinbase.AddTxIn(wire.NewTxIn(wire.NewOutPoint(&chainhash.Hash{}, wire.MaxPrevOutIndex), []byte{0x51, 0x51}, nil))
	coinbase.AddTxOut(wire.NewTxOut(50e8, []byte{0x51}))
	spend := wire.NewMsgTx(1)
	spend.AddTxIn(wire.NewTxIn(wire.NewOutPoint(&chainhash.Hash{7}, 0), []byte{0x51}, nil))
	spend.AddTxOut(wire.NewTxOut(1e8, []byte{0x51}))
	b := wire.NewMsgBlock(header(*simnet.GenesisHash, chainhash.Hash{}))
	_ = b.AddTransaction(coinbase)
	_ = b.AddTransaction(spend)
	b.Header.MerkleRoot = blockchain.CalcMerkleRoot([]*btcutil.Tx{btcutil.NewTx(coinbase), btcutil.NewTx(spend)}, false)
	solve(&b.Header)
	return b
}

// solve searches the header's nonce until its hash meets its bits' target,
// so that the block passes the proof-of-work check.
func solve(h *wire.BlockHeader) {
	target := blockchain.CompactToBig(h.Bits)
	for {
		hash := h.BlockHash()
		if blockchain.HashToBig(&hash).Cmp(target) <= 0 {
			return
		}
		h.Nonce++
	}
}

// blockWithAWrongMerkleRoot is bad with one byte of its merkle root
// flipped, its proof of work solved again: the block checks refuse it.
func blockWithAWrongMerkleRoot(bad *wire.MsgBlock) *wire.MsgBlock {
	b := *bad
	b.Header.MerkleRoot[0] ^= 1
	solve(&b.Header)
	return &b
}

// undecodableTx is a framed tx message whose payload claims more inputs
// than any message can hold.
func undecodableTx() []byte {
	payload := []byte{1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0x7f}
	frame := binary.LittleEndian.AppendUint32(nil, uint32(simnet.Net))
	command := make([]byte, wire.CommandSize)
	copy(command, wire.CmdTx)
	frame = append(frame, command...)
	frame = binary.LittleEndian.AppendUint32(frame, uint32(len(payload)))
	frame = append(frame, chainhash.DoubleHashB(payload)[:4]...)
	return append(frame, payload...)
}

// newFollower is a follower of the peer at addr over a fresh memory store,
// with cfg's other settings; the log goes to the test's.
func newFollower(t *testing.T, addr string, cfg Config) (*Follower, *utxo.DB) {
	t.Helper()
	store, err := utxo.Open(context.Background(), memory.New(), utxo.Options{Network: "simnet"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return followerOver(t, addr, cfg, store, blockStore(t)), store
}

// followerOver is a follower of the peer at addr feeding store and blocks
// through a path with every block check of simnet.
func followerOver(t *testing.T, addr string, cfg Config, store *utxo.DB, blocks *blockstore.Store) *Follower {
	t.Helper()
	path, err := blockpath.Open(context.Background(), blockpath.Config{Store: store, Rules: chain.BlockRules{Params: simnet}, Blocks: blocks, Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Peer, cfg.Network, cfg.Path = addr, simnetNetwork, path
	if cfg.Logger == nil {
		cfg.Logger = testlog.Logger(t)
	}
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestInvalidDataFromThePeer: headers that do not form a chain, a header
// without its proof of work (which the follower used to keep, so a peer
// could send millions of them a second), a block spending an output that
// does not exist, a block that fails the block checks (chain.BlockRules),
// and a transaction that does not decode each end the connection and ban
// the peer, with the invalid data as the ban's reason; Run (with
// StopAtTip) returns a *BannedError without connecting again, and none of
// the data reaches the store past the genesis block.
func TestInvalidDataFromThePeer(t *testing.T) {
	bad := blockSpendingNothing()
	wrongRoot := blockWithAWrongMerkleRoot(bad)
	genesis := *simnet.GenesisHash
	cases := []struct {
		name    string
		headers func() []*wire.BlockHeader
		want    string
		after   []byte
	}{
		{"headers that do not form a chain", brokenHeaders, "headers do not connect to each other", nil},
		{"a header without its proof of work", func() []*wire.BlockHeader {
			return []*wire.BlockHeader{wire.NewBlockHeader(1, &genesis, &chainhash.Hash{1}, 0x1d00ffff, 0)}
		}, "a header without its proof of work", nil},
		{"a block spending a missing output", func() []*wire.BlockHeader {
			return []*wire.BlockHeader{&bad.Header}
		}, "block " + bad.BlockHash().String() + " at height 1", nil},
		{"a block that fails the block checks", func() []*wire.BlockHeader {
			return []*wire.BlockHeader{&wrongRoot.Header}
		}, "block " + wrongRoot.BlockHash().String() + " at height 1 fails the merkle root check", nil},
		{"a transaction that does not decode", func() []*wire.BlockHeader { return nil },
			"a message that does not decode", undecodableTx()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			node := &peertest.Peer{Headers: c.headers, After: c.after, Blocks: map[chainhash.Hash]*wire.MsgBlock{
				genesis: simnet.GenesisBlock, bad.BlockHash(): bad, wrongRoot.BlockHash(): wrongRoot}}
			f, store := newFollower(t, node.Listen(t), Config{StopAtTip: true})
			err := runWithin(t, f)
			var banned *BannedError
			if !errors.As(err, &banned) || !strings.Contains(banned.Reason, "invalid data from the peer") || !strings.Contains(banned.Reason, c.want) {
				t.Fatalf("Run: %v; want a ban for %q", err, c.want)
			}
			if n := node.Connections(); n != 1 {
				t.Errorf("%d connections to the banned peer, want 1", n)
			}
			if tip, ok, _ := store.Tip(context.Background()); ok && tip.Height > 0 {
				t.Errorf("the store's tip moved to %s at height %d", tip.Hash, tip.Height)
			}
			if _, err := store.Get(context.Background(), bad.Transactions[1].TxHash()); err == nil {
				t.Error("the invalid block's transaction is in the store")
			}
		})
	}
}

// brokenHeaders are headers that do not form a chain.
func brokenHeaders() []*wire.BlockHeader {
	return []*wire.BlockHeader{header(*simnet.GenesisHash, chainhash.Hash{1}), header(chainhash.Hash{2}, chainhash.Hash{3})}
}

// runWithin runs f until it returns, at most a minute.
func runWithin(t *testing.T, f *Follower) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := f.Run(ctx)
	if ctx.Err() != nil {
		t.Fatalf("Run did not return within 60s (%v)", err)
	}
	return err
}

// TestBanOutlivesARestart: the ban is kept in the ban file, so a new
// follower of the same peer with the same file does not connect while it
// lasts; its metric says until when.
func TestBanOutlivesARestart(t *testing.T) {
	node := &peertest.Peer{Headers: brokenHeaders}
	addr := node.Listen(t)
	bans := filepath.Join(t.TempDir(), "bans.json")
	first, _ := newFollower(t, addr, Config{StopAtTip: true, BanFile: bans, BanDuration: time.Hour})
	var banned *BannedError
	if err := runWithin(t, first); !errors.As(err, &banned) {
		t.Fatalf("Run: %v, want a ban", err)
	}
	metrics := NewMetrics()
	again, _ := newFollower(t, addr, Config{StopAtTip: true, BanFile: bans, Metrics: metrics})
	ban, ok := again.Banned()
	if !ok || !ban.Until.Equal(banned.Until) || ban.Reason != banned.Reason {
		t.Fatalf("after a restart the ban is %+v (%v), want %+v", ban, ok, banned.Ban)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	until := -1.0
	for _, fam := range families {
		if fam.GetName() == "utxostore_follow_peer_banned_until_seconds" {
			until = fam.GetMetric()[0].GetGauge().GetValue()
		}
	}
	if until != float64(banned.Until.Unix()) {
		t.Errorf("utxostore_follow_peer_banned_until_seconds is %v, want %d", until, banned.Until.Unix())
	}
	if err := runWithin(t, again); !errors.As(err, &banned) {
		t.Fatalf("Run after a restart: %v, want the ban", err)
	}
	if n := node.Connections(); n != 1 {
		t.Errorf("%d connections to the banned peer, want 1", n)
	}
}

// TestBanRunsOut: once its ban has run out the follower connects again
// (and is banned again by the same invalid data); with a negative
// BanDuration there is no ban, and invalid data only drops the connection.
// Headers that never connect to a known block drop the connection without
// a ban: a reorganising peer announces such headers too.
func TestBanRunsOut(t *testing.T) {
	unconnected := func() []*wire.BlockHeader { return []*wire.BlockHeader{header(chainhash.Hash{4}, chainhash.Hash{5})} }
	for _, c := range []struct {
		name     string
		duration time.Duration
		headers  func() []*wire.BlockHeader
		banned   bool
	}{
		{"a short ban", 100 * time.Millisecond, brokenHeaders, true},
		{"bans off", -1, brokenHeaders, false},
		{"headers that never connect", time.Hour, unconnected, false},
	} {
		node := &peertest.Peer{Headers: c.headers}
		logged := make(chan string, 100)
		f, _ := newFollower(t, node.Listen(t), Config{BanDuration: c.duration, MaxBackoff: time.Second, Logger: slog.New(lineHandler{logged})})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- f.Run(ctx) }()
		// Each connection ends in a ban, or without one in a reconnection.
		ended := map[bool]string{true: "is banned until", false: "reconnecting"}[c.banned]
		deadline := time.After(60 * time.Second)
		var lines []string
		for endings := 0; endings < 2; {
			select {
			case line := <-logged:
				lines = append(lines, line)
				if strings.Contains(line, ended) {
					endings++
				}
			case <-deadline:
				t.Fatalf("%s: not two lines saying %q within 60s; the log:\n%s", c.name, ended, strings.Join(lines, "\n"))
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("%s: Run: %v", c.name, err)
		}
		log := strings.Join(lines, "\n")
		if strings.Contains(log, "has run out; connecting") != c.banned || strings.Contains(log, "banned") != c.banned {
			t.Errorf("%s: the log:\n%s", c.name, log)
		}
		if n := node.Connections(); n < 2 {
			t.Errorf("%s: %d connections, want a second one", c.name, n)
		}
	}
}

// TestBehind: a peer whose headers run five blocks past the genesis block
// it serves leaves the store five blocks behind, which Behind reports (the
// daemon's readiness reads it); before the peer's headers it knows
// nothing.
func TestBehind(t *testing.T) {
	genesis := *simnet.GenesisHash
	var headers []*wire.BlockHeader
	for parent, i := genesis, 0; i < 5; i++ {
		h := header(parent, chainhash.Hash{byte(i)})
		headers = append(headers, h)
		parent = h.BlockHash()
	}
	node := &peertest.Peer{Headers: func() []*wire.BlockHeader { return headers }, Blocks: map[chainhash.Hash]*wire.MsgBlock{genesis: simnet.GenesisBlock}}
	f, _ := newFollower(t, node.Listen(t), Config{})
	if _, known := f.Behind(); known {
		t.Fatal("Behind is known before any peer answered")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		behind, known := f.Behind()
		if known && behind == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Behind reports %d (known %v), want 5 blocks", behind, known)
		}
		time.Sleep(10 * time.Millisecond) // polling, not synchronisation
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestBehindIsUnknownOnceTheConnectionEnds: once the connection to a peer
// that told its chain ends, Behind no longer knows how far behind the store
// is, until a peer tells it again. It used to go on reporting what the
// last peer told, and the daemon stayed ready while following no one.
func TestBehindIsUnknownOnceTheConnectionEnds(t *testing.T) {
	var accepted atomic.Int32
	addr := peertest.ServeLoopback(t, &accepted, func(conn net.Conn) {
		defer conn.Close()
		if accepted.Load() > 1 {
			return // the peer is gone
		}
		send := func(msg wire.Message) { _ = wire.WriteMessage(conn, msg, wire.ProtocolVersion, simnet.Net) }
		for {
			msg, _, err := wire.ReadMessage(conn, wire.ProtocolVersion, simnet.Net)
			if err != nil {
				return
			}
			switch m := msg.(type) {
			case *wire.MsgVersion:
				me := wire.NewNetAddressIPPort(net.IPv4(127, 0, 0, 1), 0, wire.SFNodeNetwork)
				send(wire.NewMsgVersion(me, &m.AddrMe, 1, 0))
				send(wire.NewMsgVerAck())
			case *wire.MsgGetHeaders:
				reply := wire.NewMsgHeaders()
				_ = reply.AddBlockHeader(header(*simnet.GenesisHash, chainhash.Hash{1}))
				send(reply)
				return // the connection ends once the peer has told its chain
			}
		}
	})
	logged := make(chan string, 100)
	f, _ := newFollower(t, addr, Config{Logger: slog.New(lineHandler{logged})})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	deadline := time.After(60 * time.Second)
	for ended := false; !ended; {
		select {
		case line := <-logged:
			ended = strings.Contains(line, "reconnecting")
		case <-deadline:
			t.Fatal("the connection did not end within 60s")
		}
	}
	if behind, known := f.Behind(); known {
		t.Fatalf("with the connection ended Behind reports %d blocks, known", behind)
	}
	// Nor do the metrics: a dashboard showed the last peer's height and 0
	// blocks behind while the follower followed no one.
	m := f.cfg.Metrics
	if connected, peer, behind := testutil.ToFloat64(m.peerConnected), testutil.ToFloat64(m.peerHeight), testutil.ToFloat64(m.behind); connected != 0 || !math.IsNaN(peer) || !math.IsNaN(behind) {
		t.Fatalf("with the connection ended the metrics say connected %v, peer height %v, %v blocks behind", connected, peer, behind)
	}
}

// blockStore is an empty block store that keeps every block.
func blockStore(t *testing.T) *blockstore.Store {
	t.Helper()
	b, err := blockstore.Open(t.TempDir(), blockstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// lineHandler hands each log record's message to a channel, dropping it
// when the channel is full.
type lineHandler struct{ lines chan<- string }

func (h lineHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h lineHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h lineHandler) WithGroup(string) slog.Handler            { return h }
func (h lineHandler) Handle(_ context.Context, r slog.Record) error {
	select {
	case h.lines <- r.Message:
	default:
	}
	return nil
}
