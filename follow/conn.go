package follow

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/blockstore"
	"github.com/utxostore/utxostore/chain"
)

// The message header: magic, command, payload length, checksum; Bitcoin
// SV's extended header follows one whose command is "extmsg" with the
// real command and a 64-bit length (bitcoin-sv src/protocol.cpp,
// CMessageHeader), and carries no checksum.
const (
	headerSize         = 24
	extendedHeaderSize = 20
	cmdExtended        = "extmsg"
)

// Timeouts of the connection: the handshake, and each write (a peer that
// stops reading what it is sent).
const (
	handshakeTimeout = 30 * time.Second
	writeTimeout     = 2 * time.Minute
)

// memoryBlockBytes is the largest block message held in memory; a larger
// one (past Bitcoin's 4 MB) is staged in the block store as it is read
// from the socket and connected from there (blockpath.Path.ConnectStaged).
const memoryBlockBytes = 4 << 20

// ourVersion is the protocol version the follower announces: 70016 has
// Bitcoin SV's nodes send a message over 4 GB in the extended header.
const ourVersion = 70016

// conn is one P2P connection in the network's framing. Messages are
// decoded with btcd's wire codecs, which every family's messages share
// byte for byte (version, verack, ping, headers, inv, getdata, notfound,
// reject), except blocks and transactions, which chain parses without
// wire's size limits.
type conn struct {
	nc    net.Conn
	r     *bufio.Reader
	proto *protocol
	magic chain.Magic
	addr  string
	// blocks stages the blocks too large for memory.
	blocks *blockstore.Store
	// pver is the protocol version both sides speak, once the peer's
	// version is known.
	pver uint32
	// peer is the peer's version message.
	peer *wire.MsgVersion
	wmu  sync.Mutex
	// staging is the block message being staged, nil between such
	// messages: a large block takes long to arrive, and is no stall while
	// it keeps coming (if it was asked for: the session judges).
	staging atomic.Pointer[stagingBlock]
	// heardAt is when the last message arrived (Unix nanoseconds), or the
	// handshake ended.
	heardAt atomic.Int64
}

// Messages the connection delivers besides wire's: a block, in memory or
// staged, and a transaction.
type (
	blockMsg struct {
		block  *chain.Block       // held in memory
		staged *blockstore.Staged // or staged in the block store
	}
	txMsg  struct{ tx *chain.Tx }
	verAck struct{}
)

func (b blockMsg) hash() chainhash.Hash {
	if b.staged != nil {
		return b.staged.Hash()
	}
	return b.block.Hash
}

// whole is the block held in memory: a staged block is read whole (a
// reorganisation's branch, which a reorganisation holds in memory).
func (b blockMsg) whole() (*chain.Block, error) {
	if b.staged == nil {
		return b.block, nil
	}
	return b.staged.ReadBlock()
}

// counts are the block's transaction count and size.
func (b blockMsg) counts() (txs int, size int64) {
	if b.staged == nil {
		return len(b.block.Txs), b.block.Size
	}
	if r, err := b.staged.Open(); err == nil {
		defer r.Close()
		if br, err := chain.NewBlockReader(r); err == nil {
			txs = int(br.Info().TxCount)
		}
	}
	return txs, b.staged.Size()
}

// discard drops a staged block no one connects.
func (b blockMsg) discard() {
	if b.staged != nil {
		_ = b.staged.Discard()
	}
}

// dial connects and makes the handshake: our version, the peer's version
// (a node of the sibling chain is refused with an *OtherChainError) and
// the verack of each.
func dial(ctx context.Context, addr string, proto *protocol, blocks *blockstore.Store, tip int32) (*conn, error) {
	nc, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &conn{nc: nc, r: bufio.NewReaderSize(nc, 1<<16), proto: proto, magic: proto.network.P2PMagic(), addr: addr, blocks: blocks, pver: ourVersion}
	// A stop ends a handshake the peer is slow to answer at once, rather
	// than at its timeout.
	stopHandshake := context.AfterFunc(ctx, func() { nc.Close() })
	err = c.handshake(tip)
	if !stopHandshake() {
		nc.Close()
		return nil, ctx.Err()
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	c.heardAt.Store(time.Now().UnixNano())
	return c, nil
}

func (c *conn) handshake(tip int32) error {
	_ = c.nc.SetDeadline(time.Now().Add(handshakeTimeout))
	defer c.nc.SetDeadline(time.Time{})
	me := wire.NewNetAddressIPPort(net.IPv4zero, 0, 0)
	you := me
	if tcp, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok {
		you = wire.NewNetAddressIPPort(tcp.IP, uint16(tcp.Port), 0)
	}
	v := wire.NewMsgVersion(me, you, rand.Uint64(), tip)
	v.ProtocolVersion = ourVersion
	v.UserAgent = "/utxostore:0.1/"
	v.Services = c.proto.services
	if err := c.send(v); err != nil {
		return err
	}
	for gotVerAck := false; c.peer == nil || !gotVerAck; {
		msg, err := c.read()
		if err != nil {
			if c.peer == nil && !isInvalid(err) {
				return fmt.Errorf("the connection ended before the handshake completed (another network, or the peer refused us): %w", err)
			}
			return err
		}
		switch m := msg.(type) {
		case *wire.MsgVersion:
			if c.peer != nil {
				return invalid("a second version message")
			}
			if err := c.proto.recognize(c.addr, m); err != nil {
				return err
			}
			c.peer, c.pver = m, min(ourVersion, uint32(max(m.ProtocolVersion, 0)))
			if err := c.send(wire.NewMsgVerAck()); err != nil {
				return err
			}
		case verAck:
			gotVerAck = true
		}
	}
	return nil
}

// send writes one message.
func (c *conn) send(msg wire.Message) error {
	var payload bytes.Buffer
	if err := msg.BtcEncode(&payload, c.pver, wire.BaseEncoding); err != nil {
		return err
	}
	return c.sendRaw(msg.Command(), payload.Bytes())
}

// sendRaw writes one message of command with its payload.
func (c *conn) sendRaw(command string, payload []byte) error {
	frame := make([]byte, headerSize, headerSize+len(payload))
	copy(frame, c.magic[:])
	copy(frame[4:16], command)
	binary.LittleEndian.PutUint32(frame[16:], uint32(len(payload)))
	copy(frame[20:], chainhash.DoubleHashB(payload)[:4])
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err := c.nc.Write(append(frame, payload...))
	return err
}

// close ends the connection.
func (c *conn) close() error { return c.nc.Close() }

// msgHeader is a message header as read.
type msgHeader struct {
	command  string
	length   uint64
	checksum [4]byte
	extended bool
}

// readHeader reads a message header, refusing one of another network, a
// malformed command, an extended header from a peer of a family that has
// none, and a length over what the network allows the command.
func (c *conn) readHeader() (msgHeader, error) {
	var h msgHeader
	var b [headerSize]byte
	if _, err := io.ReadFull(c.r, b[:]); err != nil {
		return h, err
	}
	if got := chain.Magic(b[:4]); got != c.magic {
		if c.peer == nil {
			// A node of another network, which a follower pointed at the
			// wrong port meets: not invalid data, a wrong peer.
			return h, &OtherChainError{Peer: c.addr, Network: c.proto.network.Name, Chain: "another network",
				Why: fmt.Sprintf("its messages start with %s, %s's with %s", got, c.proto.network.Name, c.magic)}
		}
		return h, invalid("a message of another network (magic %s, %s's is %s)", got, c.proto.network.Name, c.magic)
	}
	command, err := commandOf(b[4:16])
	if err != nil {
		return h, err
	}
	h.command, h.length = command, uint64(binary.LittleEndian.Uint32(b[16:20]))
	copy(h.checksum[:], b[20:24])
	if command == cmdExtended {
		if !c.proto.extended {
			return h, invalid("an extended message header (extmsg), which %s nodes do not send", c.proto.network.Family)
		}
		var ext [extendedHeaderSize]byte
		if _, err := io.ReadFull(c.r, ext[:]); err != nil {
			return h, err
		}
		if h.command, err = commandOf(ext[:12]); err != nil {
			return h, err
		}
		h.length, h.extended = binary.LittleEndian.Uint64(ext[12:]), true
	}
	if limit := c.proto.limit(h.command); h.length > limit {
		return h, invalid("a %s message of %d bytes, over the %d bytes %s allows it", h.command, h.length, limit, c.proto.network.Name)
	}
	return h, nil
}

// commandOf reads a command: printable ASCII, then zeros to its 12 bytes.
func commandOf(b []byte) (string, error) {
	end := bytes.IndexByte(b, 0)
	if end < 0 {
		end = len(b)
	}
	for i, ch := range b {
		if (i < end && (ch < ' ' || ch > '~')) || (i >= end && ch != 0) {
			return "", invalid("a message with a malformed command %q", b)
		}
	}
	return string(b[:end]), nil
}

// read reads the next message: a wire message, a blockMsg, a txMsg,
// verAck, or nil for a message the follower has no use for.
func (c *conn) read() (any, error) {
	h, err := c.readHeader()
	if err != nil {
		return nil, err
	}
	if h.command == wire.CmdBlock && h.length > memoryBlockBytes {
		return c.stageBlock(h)
	}
	payload := make([]byte, h.length)
	if _, err := io.ReadFull(c.r, payload); err != nil {
		return nil, err
	}
	if !h.extended && !bytes.Equal(chainhash.DoubleHashB(payload)[:4], h.checksum[:]) {
		return nil, invalid("a %s message whose checksum is wrong", h.command)
	}
	var msg wire.Message
	switch h.command {
	case wire.CmdBlock:
		b, err := chain.ParseBlock(payload)
		if err != nil {
			return nil, invalid("a message that does not decode (a block: %w)", err)
		}
		return blockMsg{block: b}, nil
	case wire.CmdTx:
		tx, err := chain.ParseTx(payload)
		if err != nil {
			return nil, invalid("a message that does not decode (a transaction: %w)", err)
		}
		return txMsg{tx}, nil
	case wire.CmdVerAck:
		return verAck{}, nil
	case wire.CmdVersion:
		msg = &wire.MsgVersion{}
	case wire.CmdPing:
		msg = &wire.MsgPing{}
	case wire.CmdHeaders:
		msg = &wire.MsgHeaders{}
	case wire.CmdInv:
		msg = &wire.MsgInv{}
	case wire.CmdNotFound:
		msg = &wire.MsgNotFound{}
	case wire.CmdReject:
		msg = &wire.MsgReject{}
	default:
		return nil, nil
	}
	if err := msg.BtcDecode(bytes.NewBuffer(payload), c.pver, wire.BaseEncoding); err != nil {
		return nil, invalid("a message that does not decode (%s: %w)", h.command, err)
	}
	return msg, nil
}

// stageBlock stages a block message's payload in the block store as it is
// read, checking its checksum on the way.
func (c *conn) stageBlock(h msgHeader) (any, error) {
	head, err := c.r.Peek(chain.HeaderSize) // h.length > memoryBlockBytes
	if err != nil {
		return nil, err
	}
	blockHash := chainhash.DoubleHashH(head)
	staging := &stagingBlock{hash: blockHash}
	c.staging.Store(staging)
	defer c.staging.Store(nil)
	var sum hash.Hash
	src := io.Reader(&progress{r: c.r, at: &staging.bytesAt})
	if !h.extended {
		sum = sha256.New()
		src = io.TeeReader(src, sum)
	}
	st, err := c.blocks.Stage(src, int64(h.length), blockHash)
	if err != nil {
		return nil, fmt.Errorf("staging block %s (%d bytes) from the peer: %w", blockHash, h.length, err)
	}
	if sum != nil {
		if second := sha256.Sum256(sum.Sum(nil)); !bytes.Equal(second[:4], h.checksum[:]) {
			return nil, errors.Join(invalid("block %s, whose message checksum is wrong", blockHash), st.Discard())
		}
	}
	return blockMsg{staged: st}, nil
}

// stagingBlock is a block message being staged: its block's hash, and
// when its bytes last arrived (Unix nanoseconds, 0 before any).
type stagingBlock struct {
	hash    chainhash.Hash
	bytesAt atomic.Int64
}

// progress records when its reader last yielded bytes.
type progress struct {
	r  io.Reader
	at *atomic.Int64
}

func (p *progress) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.at.Store(time.Now().UnixNano())
	}
	return n, err
}

// readLoop reads messages until the connection fails, answering pings
// itself and delivering the rest; its last delivery is the error that
// ended it.
func (c *conn) readLoop(deliver func(any) bool) {
	for {
		msg, err := c.read()
		if err != nil {
			deliver(err)
			return
		}
		c.heardAt.Store(time.Now().UnixNano())
		switch m := msg.(type) {
		case nil:
		case *wire.MsgPing:
			if err := c.send(wire.NewMsgPong(m.Nonce)); err != nil {
				deliver(err)
				return
			}
		default:
			if !deliver(m) {
				if b, ok := m.(blockMsg); ok {
					b.discard()
				}
				return
			}
		}
	}
}
