package svpeer

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	bsvhash "github.com/bsv-blockchain/go-bt/v2/chainhash"
	bsvwire "github.com/bsv-blockchain/go-wire"
	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/internal/peertest"
)

// Fault is a hostile message a Peer sends in place of a block.
type Fault int

// The faults.
const (
	// Sound sends the block.
	Sound Fault = iota
	// Oversized sends an extended block header claiming a terabyte, then
	// nothing.
	Oversized
	// BadChecksum sends the block in a plain header with a wrong checksum.
	BadChecksum
	// BadCommand sends an extended header whose inner command is not
	// printable.
	BadCommand
	// Withheld sends nothing.
	Withheld
)

// Peer serves Chain as a Bitcoin SV node on regtest.
type Peer struct {
	Chain *Chain
	// UserAgent is the version message's ("/Bitcoin SV:1.2.0/" when
	// empty): a node of another chain is another user agent.
	UserAgent string
	// Extended lists the heights whose block message is framed in the
	// extended header.
	Extended map[int32]bool
	// Faults replaces the block messages of heights with a hostile one.
	Faults map[int32]Fault
	// Pace, when set, sends a block streamed from its file in writes of
	// 64 KiB this far apart: a slow link.
	Pace time.Duration
	// Unasked, when set, is a height whose block the peer leaves out of
	// its headers and sends, unasked, after its first answer to
	// getheaders, at Pace: a block nobody asked for, trickled.
	Unasked int32

	connections atomic.Int32
}

// magic is Bitcoin SV regtest's P2P magic in go-wire's numbering.
const magic = bsvwire.RegTestNet

// go-wire's limits are its package's: large enough for the blocks it
// frames itself, those of a few megabytes.
func init() { bsvwire.SetLimits(64 << 20) }

// Listen serves connections on a free loopback port until the test ends,
// and returns the address.
func (p *Peer) Listen(t testing.TB) string {
	return peertest.ServeLoopback(t, &p.connections, func(conn net.Conn) { p.serve(t, conn) })
}

// Connections is how many connections the peer has accepted.
func (p *Peer) Connections() int { return int(p.connections.Load()) }

// serve answers one connection until the other side drops it.
func (p *Peer) serve(t testing.TB, conn net.Conn) {
	defer conn.Close()
	w := bufio.NewWriterSize(conn, 1<<20)
	send := func(msg bsvwire.Message) bool {
		if err := bsvwire.WriteMessage(w, msg, bsvwire.ProtocolVersion, magic); err != nil {
			return false
		}
		return w.Flush() == nil
	}
	r := bufio.NewReader(conn)
	unasked := p.Unasked != 0
	for {
		msg, _, err := bsvwire.ReadMessage(r, bsvwire.ProtocolVersion, magic)
		if err != nil {
			return
		}
		switch msg := msg.(type) {
		case *bsvwire.MsgVersion:
			if !send(p.version(msg)) || !send(bsvwire.NewMsgVerAck()) {
				return
			}
		case *bsvwire.MsgVerAck:
			// As a Bitcoin SV node does after the verack.
			if !send(bsvwire.NewMsgProtoconf(2<<20, false)) {
				return
			}
		case *bsvwire.MsgPing:
			if !send(bsvwire.NewMsgPong(msg.Nonce)) {
				return
			}
		case *bsvwire.MsgGetHeaders:
			if !send(p.headers(msg)) {
				return
			}
			if unasked {
				unasked = false
				if !p.sendBlock(t, w, p.Chain.Blocks[p.Unasked].Hash) {
					return
				}
			}
		case *bsvwire.MsgGetData:
			for _, iv := range msg.InvList {
				if iv.Type != bsvwire.InvTypeBlock {
					continue
				}
				if !p.sendBlock(t, w, chainhash.Hash(iv.Hash)) {
					return
				}
			}
		}
	}
}

// version is the peer's version message.
func (p *Peer) version(ours *bsvwire.MsgVersion) *bsvwire.MsgVersion {
	me := bsvwire.NewNetAddressIPPort(net.IPv4(127, 0, 0, 1), 18444, bsvwire.SFNodeNetwork|bsvwire.SFNodeBitcoinCash)
	_, tip := p.Chain.Tip()
	v := bsvwire.NewMsgVersion(me, &ours.AddrMe, 7, tip)
	v.Services = bsvwire.SFNodeNetwork | bsvwire.SFNodeBitcoinCash
	v.UserAgent = p.UserAgent
	if v.UserAgent == "" {
		v.UserAgent = "/Bitcoin SV:1.2.0/"
	}
	// A multistream association id, as Bitcoin SV nodes add after the
	// relay flag.
	v.AssociationID = append([]byte{0x01}, make([]byte, 16)...)
	return v
}

// headers answers getheaders with the blocks after the first locator hash
// the chain holds.
func (p *Peer) headers(get *bsvwire.MsgGetHeaders) *bsvwire.MsgHeaders {
	reply := bsvwire.NewMsgHeaders()
	from := len(p.Chain.Blocks)
	for _, l := range get.BlockLocatorHashes {
		if h := p.height(chainhash.Hash(*l)); h >= 0 {
			from = int(h) + 1
			break
		}
	}
	for h := from; h < len(p.Chain.Blocks) && (p.Unasked == 0 || h < int(p.Unasked)) && len(reply.Headers) < bsvwire.MaxBlockHeadersPerMsg; h++ {
		b := p.Chain.Blocks[h]
		prev, root := bsvhash.Hash(b.Header.PrevBlock), bsvhash.Hash(b.Header.MerkleRoot)
		hdr := bsvwire.NewBlockHeader(b.Header.Version, &prev, &root, b.Header.Bits, b.Header.Nonce)
		hdr.Timestamp = b.Header.Timestamp
		_ = reply.AddBlockHeader(hdr)
	}
	return reply
}

func (p *Peer) height(hash chainhash.Hash) int32 {
	for h, b := range p.Chain.Blocks {
		if b.Hash == hash {
			return int32(h)
		}
	}
	return -1
}

// sendBlock sends the block with hash: a small one as go-wire frames it,
// a large one streamed from its file in a header of the peer's framing,
// or its fault.
func (p *Peer) sendBlock(t testing.TB, w *bufio.Writer, hash chainhash.Hash) bool {
	h := p.height(hash)
	if h < 0 {
		return true
	}
	b := p.Chain.Blocks[h]
	switch p.Faults[h] {
	case Oversized:
		_, _ = w.Write(extendedHeader("block", 1<<40))
		_ = w.Flush()
		return false
	case BadCommand:
		_, _ = w.Write(extendedHeader("blo\x01ck", uint64(b.Size)))
		_ = w.Flush()
		return false
	case Withheld:
		return true
	}
	f, err := os.Open(b.Path)
	if err != nil {
		t.Error(err)
		return false
	}
	defer f.Close()
	switch {
	case p.Extended[h]:
		_, err = w.Write(extendedHeader("block", uint64(b.Size)))
	case b.Size <= 4<<20 && p.Faults[h] == Sound:
		msg := &bsvwire.MsgBlock{}
		if err := msg.Deserialize(bufio.NewReader(f)); err != nil {
			t.Error(err)
			return false
		}
		if err := bsvwire.WriteMessage(w, msg, bsvwire.ProtocolVersion, magic); err != nil {
			return false
		}
		return w.Flush() == nil
	default:
		var sum [4]byte
		if sum, err = checksum(f); err == nil {
			if p.Faults[h] == BadChecksum {
				sum[0] ^= 0xff
			}
			_, err = w.Write(plainHeader("block", uint32(b.Size), sum))
		}
	}
	if err == nil {
		err = p.copy(w, f)
	}
	return err == nil && w.Flush() == nil
}

// copy sends the file's bytes at the peer's pace.
func (p *Peer) copy(w *bufio.Writer, f *os.File) error {
	if p.Pace == 0 {
		_, err := io.Copy(w, f)
		return err
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return err
			}
			if err := w.Flush(); err != nil {
				return err
			}
			time.Sleep(p.Pace) // the link's pace, not a synchronisation
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// checksum is the first four bytes of the double SHA-256 of r's bytes;
// r is then back at its start.
func checksum(f *os.File) ([4]byte, error) {
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return [4]byte{}, err
	}
	second := sha256.Sum256(h.Sum(nil))
	_, err := f.Seek(0, io.SeekStart)
	return [4]byte(second[:4]), err
}

// plainHeader is a message header: magic, command, length, checksum.
func plainHeader(command string, length uint32, sum [4]byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(magic))
	cmd := make([]byte, 12)
	copy(cmd, command)
	b = append(b, cmd...)
	b = binary.LittleEndian.AppendUint32(b, length)
	return append(b, sum[:]...)
}

// extendedHeader is Bitcoin SV's extended message header: a header of
// command "extmsg", length 0xffffffff and a zero checksum, then the
// message's command and its length in 8 bytes.
func extendedHeader(command string, length uint64) []byte {
	b := plainHeader("extmsg", 0xffffffff, [4]byte{})
	cmd := make([]byte, 12)
	copy(cmd, command)
	b = append(b, cmd...)
	return binary.LittleEndian.AppendUint64(b, length)
}
