package follow

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
)

func network(t *testing.T, name string) *chain.Network {
	t.Helper()
	n, err := chain.LookupNetwork(name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// reading is a connection, past its handshake, reading data as the peer's
// bytes.
func reading(t *testing.T, networkName string, data []byte) *conn {
	t.Helper()
	n := network(t, networkName)
	rules, err := chain.NetworkRules(networkName, false)
	if err != nil {
		t.Fatal(err)
	}
	return &conn{r: bufio.NewReader(bytes.NewReader(data)), proto: newProtocol(n, rules), magic: n.P2PMagic(),
		addr: "peer", peer: &wire.MsgVersion{}, pver: ourVersion}
}

// frame is a message in the plain header.
func frame(magic chain.Magic, command string, payload []byte) []byte {
	b := append([]byte{}, magic[:]...)
	cmd := make([]byte, 12)
	copy(cmd, command)
	b = binary.LittleEndian.AppendUint32(append(b, cmd...), uint32(len(payload)))
	return append(append(b, chainhash.DoubleHashB(payload)[:4]...), payload...)
}

// extended is a message in Bitcoin SV's extended header, laid out as
// Bitcoin SV's own test of it lays it out (bitcoin-sv
// src/test/net_message_tests.cpp, read_extmsg_msg): the outer checksum is
// not zero there, and not checked.
func extended(magic chain.Magic, command string, payload []byte) []byte {
	return append(extendedHeader(magic, command, uint64(len(payload))), payload...)
}

func extendedHeader(magic chain.Magic, command string, length uint64) []byte {
	b := append([]byte{}, magic[:]...)
	b = append(b, 'e', 'x', 't', 'm', 's', 'g', 0, 0, 0, 0, 0, 0)
	b = append(b, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02, 0x03, 0x04)
	cmd := make([]byte, 12)
	copy(cmd, command)
	return binary.LittleEndian.AppendUint64(append(b, cmd...), length)
}

// A Bitcoin SV peer may frame any message in the extended header; the
// message reads as in a plain one, and the next one after it. A peer of
// Bitcoin Cash or Bitcoin sending one sends invalid data.
func TestExtendedHeader(t *testing.T) {
	bsv := network(t, "bsv-regtest")
	nonce := binary.LittleEndian.AppendUint64(nil, 42)
	data := append(extended(bsv.P2PMagic(), "ping", nonce), frame(bsv.P2PMagic(), "ping", binary.LittleEndian.AppendUint64(nil, 43))...)
	c := reading(t, "bsv-regtest", data)
	for _, want := range []uint64{42, 43} {
		msg, err := c.read()
		if ping, ok := msg.(*wire.MsgPing); err != nil || !ok || ping.Nonce != want {
			t.Fatalf("want ping %d, got %#v, %v", want, msg, err)
		}
	}
	for _, name := range []string{"bch-regtest", "regtest"} {
		c := reading(t, name, extended(network(t, name).P2PMagic(), "ping", nonce))
		if _, err := c.read(); !isInvalid(err) || !strings.Contains(err.Error(), "extended message header") {
			t.Errorf("%s: an extended header: %v", name, err)
		}
	}
}

// Headers refused before their payload is read: a length over the
// network's limit for the command, a malformed command, another
// network's magic (invalid data after the handshake, another network's
// node during it), a wrong checksum.
func TestHeaderRefusals(t *testing.T) {
	bsv := network(t, "bsv-regtest")
	m := bsv.P2PMagic()
	over := extendedHeader(m, "block", 11<<30)
	badSum := frame(m, "ping", make([]byte, 8))
	badSum[20] ^= 1
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"a block over the limit", over, "a block message of 11811160064 bytes, over the 10737418240 bytes bsv-regtest allows it"},
		{"a malformed command", frame(m, "pi\x01g", nil), "malformed command"},
		{"zeros then letters", frame(m, "ping\x00x", nil), "malformed command"},
		{"another magic", frame(chain.MagicMainnet, "ping", make([]byte, 8)), "a message of another network"},
		{"a wrong checksum", badSum, "checksum is wrong"},
	} {
		_, err := reading(t, "bsv-regtest", c.data).read()
		if !isInvalid(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want invalid data saying %q", c.name, err, c.want)
		}
	}
	hello := reading(t, "bsv-regtest", frame(chain.MagicMainnet, "version", nil))
	hello.peer = nil // during the handshake
	if _, err := hello.read(); !errors.Is(err, ErrOtherChain) || isInvalid(err) || !strings.Contains(err.Error(), "follows another network") {
		t.Errorf("another network's magic during the handshake: %v", err)
	}
	tx := reading(t, "bch-regtest", frame(network(t, "bch-regtest").P2PMagic(), "tx", make([]byte, 1_000_001)))
	if _, err := tx.read(); !isInvalid(err) || !strings.Contains(err.Error(), "a tx message of 1000001 bytes, over the 1000000") {
		t.Errorf("a Bitcoin Cash transaction over 1 MB: %v", err)
	}
}

// A node of the sibling chain is told by its user agent, or by its block
// at the split height on mainnet; nodes that name neither chain, and the
// network's own split block, pass.
func TestSiblingChainRecognised(t *testing.T) {
	for _, c := range []struct {
		network, agent, want string
	}{
		{"bsv-mainnet", "/Bitcoin Cash Node:27.1.0(EB32.0)/", "follows Bitcoin Cash"},
		{"bsv-regtest", "/bchd:0.22.2(EB32.0)/", "follows Bitcoin Cash"},
		{"bch-mainnet", "/Bitcoin SV:1.2.0/", "follows Bitcoin SV"},
		{"bch-testnet", "/Teranode:0.9/", "follows Bitcoin SV"},
		{"bsv-mainnet", "/Bitcoin SV:1.2.0/", ""},
		{"bch-mainnet", "/bchd:0.22.2/", ""},
		{"bch-mainnet", "/Satoshi:27.0.0/", ""},
		{"mainnet", "/Bitcoin SV:1.2.0/", ""},
	} {
		rules, _ := chain.NetworkRules(c.network, false)
		err := newProtocol(network(t, c.network), rules).recognize("peer", &wire.MsgVersion{UserAgent: c.agent})
		if (c.want == "") != (err == nil) || (err != nil && (!strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrOtherChain))) {
			t.Errorf("%s, user agent %s: %v, want %q", c.network, c.agent, err, c.want)
		}
	}
	bsv, bch := network(t, "bsv-mainnet"), network(t, "bch-mainnet")
	rules, _ := chain.NetworkRules("bsv-mainnet", false)
	p := newProtocol(bsv, rules)
	if err := p.splitCheck("peer", 556767, bch.Split.Hash); !errors.Is(err, ErrOtherChain) || !strings.Contains(err.Error(), "follows Bitcoin Cash") {
		t.Errorf("Bitcoin Cash's split block to a Bitcoin SV follower: %v", err)
	}
	if err := p.splitCheck("peer", 556767, chainhash.Hash{1}); !errors.Is(err, ErrOtherChain) || !strings.Contains(err.Error(), "follows another chain") {
		t.Errorf("a third block at the split height: %v", err)
	}
	if err := p.splitCheck("peer", 556767, bsv.Split.Hash); err != nil {
		t.Errorf("the network's own split block: %v", err)
	}
	if err := p.splitCheck("peer", 556766, bch.Split.Hash); err != nil {
		t.Errorf("another height: %v", err)
	}
}
