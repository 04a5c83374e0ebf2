package follow

import (
	"errors"
	"fmt"
	"strings"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
)

// protocol is what a network's family changes in the P2P protocol, the
// one part of the follower that differs between Bitcoin, Bitcoin Cash and
// Bitcoin SV: the size of the messages a peer may send, Bitcoin SV's
// extended message header, and how a node of the sibling chain (Bitcoin
// Cash's for Bitcoin SV and the other way round, which share P2P magic and
// genesis) is told apart.
type protocol struct {
	network *chain.Network
	// maxBlock is the largest block message accepted: the block rules'
	// size limit.
	maxBlock uint64
	// maxTx is the largest transaction message accepted.
	maxTx uint64
	// extended: the peer may frame a message in Bitcoin SV's extended
	// header ("extmsg"), which carries a 64-bit length.
	extended bool
	// siblingAgents are marks in the user agents of the sibling chain's
	// nodes.
	siblingAgents []string
	// services are what the follower's version message advertises:
	// NODE_WITNESS on Bitcoin, since a node reads a transaction message
	// in the witness serialization only from a peer that advertises it,
	// and a segwit transaction the follower relays (as a wallet signed
	// it) must keep its witness.
	services wire.ServiceFlag
	// blockInv and txInv are what the follower asks blocks and
	// transactions by: with their witnesses on Bitcoin, so the block
	// store and the store keep transactions as they were signed.
	blockInv, txInv wire.InvType
}

// maxMessage bounds every other message (headers, inv, getdata…): btcd's
// limit, far above the largest a node sends (2,000 headers are 162 kB, an
// inv of 50,000 items 1.8 MB).
const maxMessage = wire.MaxMessagePayload

// Largest transactions by family: Bitcoin's block, Bitcoin Cash's 1 MB
// consensus limit, and Bitcoin SV's default consensus limit since the
// Genesis upgrade, 1 GB.
const (
	bitcoinMaxTx = 4_000_000
	cashMaxTx    = 1_000_000
	svMaxTx      = 1_000_000_000
)

// User agents of the nodes of each family that a follower may meet on the
// P2P magic Bitcoin Cash and Bitcoin SV share.
var (
	cashAgents = []string{"Bitcoin Cash Node", "bchd", "Bitcoin ABC", "BCH Unlimited", "BUCash", "Flowee", "Knuth", "Verde"}
	svAgents   = []string{"Bitcoin SV", "Teranode"}
)

// newProtocol is the protocol of the network whose blocks the rules
// check, with their block size limit.
func newProtocol(network *chain.Network, rules chain.BlockRules) *protocol {
	p := &protocol{network: network, maxBlock: rules.MaxBlockSize, maxTx: bitcoinMaxTx, blockInv: wire.InvTypeBlock, txInv: wire.InvTypeTx}
	switch network.Family {
	case chain.Bitcoin:
		p.services, p.blockInv, p.txInv = wire.SFNodeWitness, wire.InvTypeWitnessBlock, wire.InvTypeWitnessTx
	case chain.BitcoinCash:
		p.maxTx, p.siblingAgents = cashMaxTx, svAgents
	case chain.BitcoinSV:
		p.maxTx, p.siblingAgents, p.extended = svMaxTx, cashAgents, true
	}
	if p.maxBlock == 0 {
		p.maxBlock = network.MaxBlockSize
	}
	p.maxTx = min(p.maxTx, p.maxBlock)
	return p
}

// limit is the largest payload a message of command may carry.
func (p *protocol) limit(command string) uint64 {
	switch command {
	case wire.CmdBlock:
		return p.maxBlock
	case wire.CmdTx:
		return p.maxTx
	}
	return maxMessage
}

// OtherChainError refuses a peer that follows another chain than the
// store's, one that shares the network's P2P magic: Bitcoin SV's for a
// store of Bitcoin Cash, or the other way round. The peer sent no invalid
// data, so it is not banned; the follower stops, since that peer will not
// become a node of the store's chain.
type OtherChainError struct {
	Peer    string
	Network string // the store's
	// Chain names the peer's chain, Why says how it was told.
	Chain string
	Why   string
}

func (e *OtherChainError) Error() string {
	return fmt.Sprintf("peer %s follows %s, not the store's network %s (%s): follow a node of %s", e.Peer, e.Chain, e.Network, e.Why, e.otherwise())
}

func (e *OtherChainError) otherwise() string {
	n, err := chain.LookupNetwork(e.Network)
	if err != nil {
		return e.Network
	}
	return n.Family.String()
}

// ErrOtherChain is what an *OtherChainError matches.
var ErrOtherChain = errors.New("the peer follows another chain")

// Is makes errors.Is(err, ErrOtherChain) true.
func (e *OtherChainError) Is(target error) bool { return target == ErrOtherChain }

// recognize refuses a peer whose version message names a node of the
// sibling chain in its user agent. Services tell nothing here: Bitcoin SV
// nodes advertise NODE_BITCOIN_CASH like Bitcoin Cash nodes (bitcoin-sv
// src/init.cpp). A peer whose user agent names neither passes, and is
// told by the split block where the network has one (splitCheck).
func (p *protocol) recognize(peer string, v *wire.MsgVersion) error {
	for _, mark := range p.siblingAgents {
		if strings.Contains(strings.ToLower(v.UserAgent), strings.ToLower(mark)) {
			sibling := chain.BitcoinSV
			if p.network.Family == chain.BitcoinSV {
				sibling = chain.BitcoinCash
			}
			return &OtherChainError{Peer: peer, Network: p.network.Name, Chain: sibling.String(),
				Why: fmt.Sprintf("its user agent %q is a %s node's", v.UserAgent, sibling)}
		}
	}
	return nil
}

// splitCheck refuses a peer whose chain holds the sibling chain's block (or
// any other than the network's) at the split height, once its headers
// reach it.
func (p *protocol) splitCheck(peer string, height int32, hash chainhash.Hash) error {
	s := p.network.Split
	if s == nil || height != s.Height || hash == s.Hash {
		return nil
	}
	why := fmt.Sprintf("its block at height %d is %s, %s's is %s", s.Height, hash, p.network.Family, s.Hash)
	other := s.Sibling.String()
	if hash != s.SiblingHash {
		why += ", " + other + "'s " + s.SiblingHash.String()
		other = "another chain"
	}
	return &OtherChainError{Peer: peer, Network: p.network.Name, Chain: other, Why: why}
}
