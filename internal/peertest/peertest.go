// Package peertest runs a P2P node on loopback that answers as a test
// tells it: the invalid data a real node never sends. It speaks the
// protocol with wire directly, on simnet (btcd's peer package refuses a
// connection between two of its peers in one process, taking it for one
// to itself).
package peertest

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
)

// Peer answers getheaders with Headers, then sends After raw, and getdata
// with the Blocks it holds.
type Peer struct {
	Headers func() []*wire.BlockHeader
	Blocks  map[chainhash.Hash]*wire.MsgBlock
	// After, when set, is sent raw after the headers.
	After []byte
	// Txs, when set, hears of every transaction the peer receives.
	Txs chan<- *wire.MsgTx
	// StopAtTx, when set, hears of the header of the first transaction
	// sent to the peer, which then reads nothing more until Drop: the
	// sender's write of the transaction goes no further than the
	// connection's buffers.
	StopAtTx chan<- struct{}

	connections atomic.Int32
	mu          sync.Mutex
	open        map[net.Conn]bool
	dropped     bool
	drop        chan struct{}
}

// Listen serves connections on a free loopback port until the test ends,
// and returns the address.
func (p *Peer) Listen(t testing.TB) string {
	p.drop = make(chan struct{})
	addr := ServeLoopback(t, &p.connections, p.serve)
	t.Cleanup(p.Drop) // before the listener's cleanup, which waits for every connection
	return addr
}

// Drop closes the peer's connections, and every later one as soon as it
// is accepted: the peer is gone.
func (p *Peer) Drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.dropped {
		p.dropped = true
		close(p.drop)
	}
	for conn := range p.open {
		conn.Close()
	}
}

// track records an open connection, and reports false once the peer is
// dropped.
func (p *Peer) track(conn net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open == nil {
		p.open = map[net.Conn]bool{}
	}
	p.open[conn] = true
	return !p.dropped
}

func (p *Peer) untrack(conn net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.open, conn)
}

// ServeLoopback calls serve, each in its own goroutine, with every
// connection to a free loopback port until the test ends, counting them in
// accepted, and returns the address. The test ends once every serve has
// returned.
func ServeLoopback(t testing.TB, accepted *atomic.Int32, serve func(net.Conn)) string {
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
			accepted.Add(1)
			conns.Add(1)
			go func() { defer conns.Done(); serve(conn) }()
		}
	}()
	return ln.Addr().String()
}

// ServeSilent serves a peer that accepts connections and never says a
// word, not even its side of the handshake; connected hears of each
// connection as it is accepted.
func ServeSilent(t testing.TB) (addr string, connected <-chan struct{}) {
	var accepted atomic.Int32
	c := make(chan struct{}, 16)
	addr = ServeLoopback(t, &accepted, func(conn net.Conn) {
		defer conn.Close()
		select {
		case c <- struct{}{}:
		default:
		}
		_, _ = io.Copy(io.Discard, conn) // until the other side hangs up
	})
	return addr, c
}

// ServeHandshaking is ServeLoopback for a peer on simnet that completes the
// handshake and hands every later message to on, with a way to answer;
// the peer drops the connection when on returns false.
func ServeHandshaking(t testing.TB, accepted *atomic.Int32, on func(msg wire.Message, send func(wire.Message)) bool) string {
	return ServeLoopback(t, accepted, func(conn net.Conn) {
		defer conn.Close()
		magic := chaincfg.SimNetParams.Net
		send := func(msg wire.Message) { _ = wire.WriteMessage(conn, msg, wire.ProtocolVersion, magic) }
		for {
			msg, _, err := wire.ReadMessage(conn, wire.ProtocolVersion, magic)
			if err != nil {
				return
			}
			if v, ok := msg.(*wire.MsgVersion); ok {
				me := wire.NewNetAddressIPPort(net.IPv4(127, 0, 0, 1), 0, wire.SFNodeNetwork)
				send(wire.NewMsgVersion(me, &v.AddrMe, 1, 0))
				send(wire.NewMsgVerAck())
				continue
			}
			if !on(msg, send) {
				return
			}
		}
	})
}

// Connections is how many connections the peer has accepted.
func (p *Peer) Connections() int { return int(p.connections.Load()) }

// serve answers one connection until the other side drops it.
func (p *Peer) serve(conn net.Conn) {
	defer conn.Close()
	if !p.track(conn) {
		return
	}
	defer p.untrack(conn)
	magic := chaincfg.SimNetParams.Net
	send := func(msg wire.Message) { _ = wire.WriteMessage(conn, msg, wire.ProtocolVersion, magic) }
	for {
		// The header first, so that the peer can stop reading at a
		// transaction's.
		var header [wire.MessageHeaderSize]byte
		if _, err := io.ReadFull(conn, header[:]); err != nil {
			return
		}
		if p.StopAtTx != nil && string(bytes.TrimRight(header[4:16], "\x00")) == wire.CmdTx {
			p.StopAtTx <- struct{}{}
			<-p.drop
			return
		}
		payload := make([]byte, binary.LittleEndian.Uint32(header[16:20]))
		if _, err := io.ReadFull(conn, payload); err != nil {
			return
		}
		msg, _, err := wire.ReadMessage(io.MultiReader(bytes.NewReader(header[:]), bytes.NewReader(payload)), wire.ProtocolVersion, magic)
		if err != nil {
			return
		}
		switch msg := msg.(type) {
		case *wire.MsgTx:
			if p.Txs != nil {
				p.Txs <- msg
			}
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
			if p.Headers != nil {
				for _, h := range p.Headers() {
					_ = reply.AddBlockHeader(h)
				}
			}
			send(reply)
			_, _ = conn.Write(p.After)
		case *wire.MsgGetData:
			for _, iv := range msg.InvList {
				if b := p.Blocks[iv.Hash]; b != nil {
					send(b)
				}
			}
		}
	}
}

// Header is a header on top of prev, told apart by its merkle root, with
// its proof of work at simnet's limit (a follower refuses a header
// without it): its nonce is searched until its hash meets the target,
// which takes two tries on average.
func Header(prev, merkle chainhash.Hash) *wire.BlockHeader {
	h := wire.NewBlockHeader(1, &prev, &merkle, chaincfg.SimNetParams.PowLimitBits, 0)
	target := blockchain.CompactToBig(h.Bits)
	for hash := h.BlockHash(); blockchain.HashToBig(&hash).Cmp(target) > 0; hash = h.BlockHash() {
		h.Nonce++
	}
	return h
}
