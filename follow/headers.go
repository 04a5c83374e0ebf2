package follow

import (
	"errors"
	"fmt"
	"math/big"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
)

// errUnknownParent is a header whose parent is neither on the peer's chain
// as known nor one of the store's locator blocks: the answer is to ask
// for headers again (an announcement after the peer reorganised), or, in
// answer to getheaders, a peer that does not follow the protocol.
var errUnknownParent = errors.New("header does not connect to a known block")

// errBrokenHeaders is a headers message whose headers do not form a chain.
var errBrokenHeaders = errors.New("headers do not connect to each other")

// errNoProofOfWork is a header whose hash does not meet its target, or
// whose target is past the network's proof-of-work limit: headers cost
// nothing to make without their work, so a peer could send them faster
// than any node mines, and take the follower's memory.
var errNoProofOfWork = errors.New("a header without its proof of work")

// peerChain is the peer's best chain as its headers tell it: the blocks at
// heights up to base are the store's (at the time of the locator the peer
// answered), hashes are the peer's blocks above base. heights indexes the
// peer's hashes, locator the store's blocks the locator named. bits are
// the difficulty bits of the peer's blocks, by the same index as hashes:
// what a branch's work is summed from. powLimit is the network's
// proof-of-work limit, which every header meets.
type peerChain struct {
	powLimit *big.Int
	base     int32
	hashes   []chainhash.Hash
	bits     []uint32
	heights  map[chainhash.Hash]int32
	locator  map[chainhash.Hash]int32
}

// newPeerChain starts from the store's chain: its tip at height tip (-1 for
// an empty store) and the locator built from it, on the network of
// params. An empty store knows only the network's genesis block, which the
// peer's chain starts with too.
func newPeerChain(tip int32, locator []chainhash.Hash, locatorHeights []int32, params *chaincfg.Params) *peerChain {
	genesis := *params.GenesisHash
	c := &peerChain{powLimit: params.PowLimit, base: tip, heights: map[chainhash.Hash]int32{}, locator: map[chainhash.Hash]int32{}}
	for i, h := range locator {
		c.locator[h] = locatorHeights[i]
	}
	if tip < 0 {
		c.hashes = []chainhash.Hash{genesis}
		c.bits = []uint32{0} // genesis is shared, never part of a branch
		c.heights[genesis] = 0
	}
	return c
}

// tip is the height of the peer's best block as known.
func (c *peerChain) tip() int32 { return c.base + int32(len(c.hashes)) }

// at returns the peer's block at height h > base.
func (c *peerChain) at(h int32) chainhash.Hash { return c.hashes[h-c.base-1] }

// workAbove is the chain work of the peer's blocks above height fork
// (at least base): the sum of each block's work, as its bits claim it.
func (c *peerChain) workAbove(fork int32) *big.Int {
	work := new(big.Int)
	for _, bits := range c.bits[fork-c.base:] {
		work.Add(work, blockchain.CalcWork(bits))
	}
	return work
}

// attach adds headers, which must form a chain whose first parent is a
// known block, each with its proof of work. Blocks the peer's chain held above that parent are
// replaced: the peer has reorganised (or, at the base, forks from the
// store). It returns the height of the last header.
func (c *peerChain) attach(headers []*wire.BlockHeader) (int32, error) {
	parent := headers[0].PrevBlock
	at, ok := c.heights[parent]
	if !ok {
		at, ok = c.locator[parent]
	}
	if !ok {
		return 0, fmt.Errorf("%w: the parent of %s is %s", errUnknownParent, headers[0].BlockHash(), parent)
	}
	for i := 1; i < len(headers); i++ {
		if headers[i].PrevBlock != headers[i-1].BlockHash() {
			return 0, fmt.Errorf("%w: header %d (%s) names parent %s, not header %d (%s)",
				errBrokenHeaders, i, headers[i].BlockHash(), headers[i].PrevBlock, i-1, headers[i-1].BlockHash())
		}
	}
	for _, h := range headers {
		// btcd's check reads the header alone, as the block checks call it.
		if err := blockchain.CheckProofOfWork(btcutil.NewBlock(&wire.MsgBlock{Header: *h}), c.powLimit); err != nil {
			return 0, fmt.Errorf("%w: %s: %v", errNoProofOfWork, h.BlockHash(), err)
		}
	}
	c.cut(at)
	for _, h := range headers {
		hash := h.BlockHash()
		c.hashes = append(c.hashes, hash)
		c.bits = append(c.bits, h.Bits)
		c.heights[hash] = c.tip()
	}
	return c.tip(), nil
}

// cut forgets the peer's blocks above height at; below the base it moves
// the base down, since the store's blocks above at are off the peer's chain.
func (c *peerChain) cut(at int32) {
	keep := max(at-c.base, 0)
	for _, hash := range c.hashes[keep:] {
		delete(c.heights, hash)
	}
	c.hashes, c.bits = c.hashes[:keep], c.bits[:keep]
	if at < c.base {
		c.base = at
		for hash, h := range c.locator {
			if h > at {
				delete(c.locator, hash)
			}
		}
	}
}
