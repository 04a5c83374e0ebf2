package chain

import (
	"fmt"
	"io"
	"math/bits"
	"strings"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
)

// Check names one of the checks [BlockRules.Check] makes.
type Check string

// The checks, in the order they are made: the header alone first, then the
// transaction list.
const (
	// CheckProofOfWork: the header's bits are within the network's limit
	// and its hash meets the target they encode.
	CheckProofOfWork Check = "proof of work"
	// CheckGenesis: the block at height 0 is the network's genesis block,
	// so that another network's blocks, whose proof of work may well meet
	// this network's limit, are not taken for this network's chain. Like
	// the proof of work, it is not checked with [BlockRules.TrustProof].
	CheckGenesis Check = "genesis block"
	// CheckCoinbase: the block has transactions, the first is a coinbase
	// and no other is.
	CheckCoinbase Check = "coinbase"
	// CheckMerkleRoot: the transactions hash to the header's merkle root,
	// without the duplicated subtree that leaves a root unchanged
	// (CVE-2012-2459).
	CheckMerkleRoot Check = "merkle root"
	// CheckDuplicateTx: no txid appears twice in the block.
	CheckDuplicateTx Check = "duplicate transaction"
	// CheckDuplicateInput: no transaction spends one output with two of
	// its inputs ([DuplicateInput]).
	CheckDuplicateInput Check = "duplicate input"
	// CheckCoinbaseHeight: from the network's BIP34 height on, the coinbase
	// script starts with the block's height (the genesis block excepted).
	CheckCoinbaseHeight Check = "BIP34 coinbase height"
	// CheckOutputValue: every transaction's output values, and their sum,
	// are in [0, MaxMoney] ([CheckOutputValues]).
	CheckOutputValue Check = "output value"
)

// CheckError is a block refused by [BlockRules.Check]. A reader of blocks
// from a file wraps it in a [*FrameError] that adds the file offset.
type CheckError struct {
	Hash   chainhash.Hash
	Height uint32
	Check  Check
	// Reason says what the block holds instead of what the check wants.
	Reason string
}

func (e *CheckError) Error() string {
	return fmt.Sprintf("chain: block %s at height %d fails the %s check: %s", e.Hash, e.Height, e.Check, e.Reason)
}

// CheckBlockSize: the block is no larger than the network's limit
// ([BlockRules.MaxBlockSize]).
const CheckBlockSize Check = "block size"

// BlockRules are the checks a block passes before anything of it is
// applied: those that need the block alone, not the outputs it spends. They
// refuse a block damaged on disk or in transit, or built wrong by a caller.
type BlockRules struct {
	Params *chaincfg.Params
	// MaxBlockSize is the size in bytes of the largest block accepted; 0
	// accepts any size.
	MaxBlockSize uint64
	// TrustProof skips the proof-of-work and merkle root checks, the costly
	// ones, for blocks the caller has validated already, and the genesis
	// check: the caller vouches for the blocks, their network included. The
	// structure checks still run.
	TrustProof bool
}

// NetworkParams returns btcd's parameters of a network by the name a
// store holds (--network): its proof-of-work limit and BIP34 height, its
// P2P magic, genesis block and address encodings ([Network.Params]).
func NetworkParams(network string) (*chaincfg.Params, error) {
	n, err := LookupNetwork(network)
	if err != nil {
		return nil, err
	}
	return n.Params, nil
}

// NetworkRules returns the rules of a network by the name a store holds,
// with the network's default block size limit.
func NetworkRules(network string, trustProof bool) (BlockRules, error) {
	n, err := LookupNetwork(network)
	if err != nil {
		return BlockRules{}, fmt.Errorf("chain: no block rules: %w", err)
	}
	return BlockRules{Params: n.Params, MaxBlockSize: n.MaxBlockSize, TrustProof: trustProof}, nil
}

// Check returns a [*CheckError] naming the first check b fails as the block
// at height, or nil when it passes them all.
func (r BlockRules) Check(b *Block, height uint32) error {
	c, err := r.begin(&b.BlockInfo, height)
	if err != nil {
		return err
	}
	for _, tx := range b.Txs {
		c.tx(tx)
	}
	return c.end()
}

// CheckStream makes Check's checks on the block br reads, which holds
// size bytes, as the block at height: it reads the transactions one at a
// time, keeping of each its txid (for the merkle root and the duplicate
// check), so a block of any size is checked in memory that grows with its
// transaction count, not with its bytes. br is read to its end.
func (r BlockRules) CheckStream(br *BlockReader, size int64, height uint32) error {
	info := br.Info()
	info.Size = size
	c, err := r.begin(&info, height)
	if err != nil {
		return err
	}
	for {
		tx, err := br.Next()
		if err == io.EOF {
			return c.end()
		}
		if err != nil {
			return err
		}
		c.tx(tx)
	}
}

// blockCheck is the checks of one block as its transactions pass, in the
// one form Check and CheckStream share. The header's checks are made
// first; of the others, each keeps the first failure it meets, and end
// reports them in the order of the Check constants, so a block that fails
// two checks gets the same answer however it was read.
type blockCheck struct {
	r      BlockRules
	info   *BlockInfo
	height uint32
	n      uint64
	merkle MerkleTree
	seen   map[chainhash.Hash]uint64
	// failed holds the first failure of each check, by check.
	failed map[Check]error
}

// begin makes the checks of the header and the size.
func (r BlockRules) begin(info *BlockInfo, height uint32) (*blockCheck, error) {
	c := &blockCheck{r: r, info: info, height: height, seen: map[chainhash.Hash]uint64{}, failed: map[Check]error{}}
	if !r.TrustProof {
		// CheckProofOfWork reads the header alone.
		header := btcutil.NewBlock(&wire.MsgBlock{Header: info.Header})
		if err := blockchain.CheckProofOfWork(header, r.Params.PowLimit); err != nil {
			return nil, c.refuse(CheckProofOfWork, "%v (network %s)", err, r.Params.Name)
		}
		if height == 0 && info.Hash != *r.Params.GenesisHash {
			return nil, c.refuse(CheckGenesis, "the block at height 0 is %s, network %s's genesis block is %s; "+
				"if the blocks are of another network, pass that network with --network", info.Hash, r.Params.Name, r.Params.GenesisHash)
		}
	}
	if r.MaxBlockSize > 0 && uint64(info.Size) > r.MaxBlockSize {
		return nil, c.refuse(CheckBlockSize, "the block has %d bytes, the network's limit is %d", info.Size, r.MaxBlockSize)
	}
	return c, nil
}

func (c *blockCheck) refuse(check Check, format string, args ...any) error {
	return &CheckError{Hash: c.info.Hash, Height: c.height, Check: check, Reason: fmt.Sprintf(format, args...)}
}

// fail keeps the first failure of check.
func (c *blockCheck) fail(check Check, format string, args ...any) {
	if c.failed[check] == nil {
		c.failed[check] = c.refuse(check, format, args...)
	}
}

// tx checks the block's next transaction.
func (c *blockCheck) tx(tx *Tx) {
	i := c.n
	c.n++
	switch {
	case i == 0 && !tx.IsCoinbase():
		c.fail(CheckCoinbase, "the first transaction, %s, is not a coinbase", tx.ID)
	case i > 0 && tx.IsCoinbase():
		c.fail(CheckCoinbase, "transaction %d, %s, is a second coinbase", i, tx.ID)
	}
	if !c.r.TrustProof {
		c.merkle.Add(tx.ID)
	}
	if first, dup := c.seen[tx.ID]; dup {
		c.fail(CheckDuplicateTx, "transactions %d and %d are both %s", first, i, tx.ID)
	} else {
		c.seen[tx.ID] = i
	}
	if first, second, found := DuplicateInput(tx.Msg); found && !tx.IsCoinbase() {
		c.fail(CheckDuplicateInput, "transaction %d, %s: inputs %d and %d both spend %s", i, tx.ID, first, second, tx.Msg.TxIn[second].PreviousOutPoint)
	}
	if err := CheckOutputValues(tx); err != nil {
		c.fail(CheckOutputValue, "%s", strings.TrimPrefix(err.Error(), "chain: "))
	}
	// The genesis block is fixed by the network, not built under its rules
	// (simnet's coinbase holds no height though BIP34 is active from 0).
	if i == 0 && c.height > 0 && int64(c.height) >= int64(c.r.Params.BIP0034Height) && tx.IsCoinbase() {
		if err := blockchain.CheckSerializedHeight(btcutil.NewTx(tx.Msg), int32(c.height)); err != nil {
			c.fail(CheckCoinbaseHeight, "%v", err)
		}
	}
}

// end makes the checks that need every transaction and returns the first
// failure, in the order of the checks.
func (c *blockCheck) end() error {
	if c.n == 0 {
		return c.refuse(CheckCoinbase, "the block has no transactions")
	}
	if !c.r.TrustProof {
		root, mutated := c.merkle.Root()
		if mutated {
			c.fail(CheckMerkleRoot, "the transaction list repeats a subtree, which leaves the merkle root unchanged (CVE-2012-2459)")
		} else if root != c.info.Header.MerkleRoot {
			c.fail(CheckMerkleRoot, "the transactions hash to %s, the header says %s", root, c.info.Header.MerkleRoot)
		}
	}
	for _, check := range []Check{CheckCoinbase, CheckMerkleRoot, CheckDuplicateTx, CheckDuplicateInput, CheckOutputValue, CheckCoinbaseHeight} {
		if err := c.failed[check]; err != nil {
			return err
		}
	}
	return nil
}

// MerkleTree computes a block's merkle root over its txids added one at a
// time, holding one pending subtree root per level (log2 of the count),
// and whether a level pairs a node with an equal one. A valid block never
// does: equal siblings mean a repeated transaction or subtree, which is
// how CVE-2012-2459 makes a second transaction list with the same root (a
// level of odd length pairs its last node with itself, so repeating it
// changes nothing).
type MerkleTree struct {
	// inner[l] is the root of the last complete subtree of 2^l leaves when
	// bit l of count is set.
	inner   []chainhash.Hash
	count   uint64
	mutated bool
}

// Add adds the next leaf, combining the complete subtrees it completes.
func (m *MerkleTree) Add(leaf chainhash.Hash) {
	h, level := leaf, 0
	for n := m.count; n&1 == 1; n >>= 1 {
		m.mutated = m.mutated || m.inner[level] == h
		h = blockchain.HashMerkleBranches(&m.inner[level], &h)
		level++
	}
	if level == len(m.inner) {
		m.inner = append(m.inner, h)
	} else {
		m.inner[level] = h
	}
	m.count++
}

// Root finishes the tree: from the lowest pending subtree, the last node
// of each level is paired with the pending subtree to its left when the
// level has an even number of nodes, and with itself otherwise.
func (m *MerkleTree) Root() (chainhash.Hash, bool) {
	if m.count == 0 {
		return chainhash.Hash{}, m.mutated
	}
	low := bits.TrailingZeros64(m.count)
	h := m.inner[low]
	for level := low; (m.count-1)>>level != 0; level++ { // more than one node at level
		if level > low && m.count>>level&1 == 1 {
			m.mutated = m.mutated || m.inner[level] == h
			h = blockchain.HashMerkleBranches(&m.inner[level], &h)
		} else {
			h = blockchain.HashMerkleBranches(&h, &h)
		}
	}
	return h, m.mutated
}
