package follow

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/utxo"
)

var simnet = &chaincfg.SimNetParams

// misbehavingPeer is a P2P node on loopback that answers getheaders and
// getdata as told: the data a real node never sends. It speaks the
// protocol with wire directly (btcd's peer package refuses a connection
// between two of its peers in one process, taking it for one to itself).
type misbehavingPeer struct {
	headers func() []*wire.BlockHeader
	blocks  map[chainhash.Hash]*wire.MsgBlock
	// after, when set, is sent raw after the headers.
	after []byte
}

func (m *misbehavingPeer) listen(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	t.Cleanup(func() { ln.Close(); conns.Wait() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() { defer conns.Done(); m.serve(conn) }()
		}
	}()
	return ln.Addr().String()
}

// serve answers one connection until the follower drops it.
func (m *misbehavingPeer) serve(conn net.Conn) {
	defer conn.Close()
	send := func(msg wire.Message) { _ = wire.WriteMessage(conn, msg, wire.ProtocolVersion, simnet.Net) }
	for {
		msg, _, err := wire.ReadMessage(conn, wire.ProtocolVersion, simnet.Net)
		if err != nil {
			return
		}
		switch msg := msg.(type) {
		case *wire.MsgVersion:
			me := wire.NewNetAddressIPPort(net.IPv4(127, 0, 0, 1), 0, wire.SFNodeNetwork)
			version := wire.NewMsgVersion(me, &msg.AddrMe, 1, 0)
			version.Services = wire.SFNodeNetwork
			send(version)
			send(wire.NewMsgVerAck())
		case *wire.MsgPing:
			send(wire.NewMsgPong(msg.Nonce))
		case *wire.MsgGetHeaders:
			reply := wire.NewMsgHeaders()
			for _, h := range m.headers() {
				_ = reply.AddBlockHeader(h)
			}
			send(reply)
			_, _ = conn.Write(m.after)
		case *wire.MsgGetData:
			for _, iv := range msg.InvList {
				if b := m.blocks[iv.Hash]; b != nil {
					send(b)
				}
			}
		}
	}
}

// header is a header on top of prev (no proof of work: the follower
// leaves that to the block checks).
func header(prev chainhash.Hash, merkle chainhash.Hash) *wire.BlockHeader {
	return wire.NewBlockHeader(1, &prev, &merkle, simnet.PowLimitBits, 0)
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

// TestInvalidDataFromThePeer: headers that do not form a chain, headers
// that never connect to a known block, a block spending an output that
// does not exist, a block that fails the block checks (chain.BlockRules), and a transaction that does not decode each get a log line naming the invalid data and a
// disconnection, and none reaches the store past the genesis block.
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
		{"headers that do not form a chain", func() []*wire.BlockHeader {
			return []*wire.BlockHeader{header(genesis, chainhash.Hash{1}), header(chainhash.Hash{2}, chainhash.Hash{3})}
		}, "headers do not connect to each other", nil},
		{"headers that do not connect", func() []*wire.BlockHeader {
			return []*wire.BlockHeader{header(chainhash.Hash{4}, chainhash.Hash{5})}
		}, "4 times in a row", nil},
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
			node := &misbehavingPeer{headers: c.headers, after: c.after, blocks: map[chainhash.Hash]*wire.MsgBlock{
				genesis: simnet.GenesisBlock, bad.BlockHash(): bad, wrongRoot.BlockHash(): wrongRoot}}
			addr := node.listen(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			store, err := utxo.Open(ctx, memory.New(), utxo.Options{Network: "simnet"})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			logged := make(chan string, 100)
			f, err := New(Config{Peer: addr, Params: simnet, Store: store, KeepDir: t.TempDir(), MaxBackoff: time.Second,
				Logf: func(format string, args ...any) {
					select {
					case logged <- sprintf(format, args...):
					default:
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- f.Run(ctx) }()
			deadline := time.After(60 * time.Second)
			var lines []string
			for found := false; !found; {
				select {
				case line := <-logged:
					lines = append(lines, line)
					found = strings.Contains(line, "invalid data from the peer") && strings.Contains(line, c.want) && strings.Contains(line, "reconnecting")
				case <-deadline:
					t.Fatalf("no line saying %q, and a reconnection, within 60s; the log:\n%s", c.want, strings.Join(lines, "\n"))
				}
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Run: %v", err)
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

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

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
	node := &misbehavingPeer{headers: func() []*wire.BlockHeader { return headers }, blocks: map[chainhash.Hash]*wire.MsgBlock{genesis: simnet.GenesisBlock}}
	addr := node.listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, err := utxo.Open(ctx, memory.New(), utxo.Options{Network: "simnet"})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	f, err := New(Config{Peer: addr, Params: simnet, Store: store, KeepDir: t.TempDir(), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if _, known := f.Behind(); known {
		t.Fatal("Behind is known before any peer answered")
	}
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
