package chain

import (
	"fmt"
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
	// CheckCoinbase: the block has transactions, the first is a coinbase
	// and no other is.
	CheckCoinbase Check = "coinbase"
	// CheckMerkleRoot: the transactions hash to the header's merkle root,
	// without the duplicated subtree that leaves a root unchanged
	// (CVE-2012-2459).
	CheckMerkleRoot Check = "merkle root"
	// CheckDuplicateTx: no txid appears twice in the block.
	CheckDuplicateTx Check = "duplicate transaction"
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

// BlockRules are the checks a block passes before anything of it is
// applied: those that need the block alone, not the outputs it spends. They
// refuse a block damaged on disk or in transit, or built wrong by a caller.
type BlockRules struct {
	Params *chaincfg.Params
	// TrustProof skips the proof-of-work and merkle root checks, the costly
	// ones, for blocks the caller has validated already. The structure
	// checks still run.
	TrustProof bool
}

// networkParams maps the network names stores are opened with (--network)
// to btcd's parameters. BSV and BCH mainnet share Bitcoin's proof-of-work
// limit and BIP34 height, so "mainnet" serves them too.
var networkParams = map[string]*chaincfg.Params{
	"mainnet":  &chaincfg.MainNetParams,
	"testnet":  &chaincfg.TestNet3Params,
	"testnet3": &chaincfg.TestNet3Params,
	"regtest":  &chaincfg.RegressionNetParams,
	"simnet":   &chaincfg.SimNetParams,
	"signet":   &chaincfg.SigNetParams,
}

// NetworkParams returns btcd's parameters of a network by the name a
// store holds (--network): its proof-of-work limit and BIP34 height, its
// P2P magic, genesis block and address encodings.
func NetworkParams(network string) (*chaincfg.Params, error) {
	params, ok := networkParams[network]
	if !ok {
		return nil, fmt.Errorf("chain: unknown network %q (known: mainnet, testnet, testnet3, regtest, simnet, signet)", network)
	}
	return params, nil
}

// NetworkRules returns the rules of a network by the name a store holds.
func NetworkRules(network string, trustProof bool) (BlockRules, error) {
	params, err := NetworkParams(network)
	if err != nil {
		return BlockRules{}, fmt.Errorf("chain: no block rules for network %q (known: mainnet, testnet, testnet3, regtest, simnet, signet)", network)
	}
	return BlockRules{Params: params, TrustProof: trustProof}, nil
}

// Check returns a [*CheckError] naming the first check b fails as the block
// at height, or nil when it passes them all.
func (r BlockRules) Check(b *Block, height uint32) error {
	refuse := func(check Check, format string, args ...any) error {
		return &CheckError{Hash: b.Hash, Height: height, Check: check, Reason: fmt.Sprintf(format, args...)}
	}
	if !r.TrustProof {
		// CheckProofOfWork reads the header alone.
		header := btcutil.NewBlock(&wire.MsgBlock{Header: b.Header})
		if err := blockchain.CheckProofOfWork(header, r.Params.PowLimit); err != nil {
			return refuse(CheckProofOfWork, "%v (network %s)", err, r.Params.Name)
		}
	}
	if len(b.Txs) == 0 {
		return refuse(CheckCoinbase, "the block has no transactions")
	}
	if !b.Txs[0].IsCoinbase() {
		return refuse(CheckCoinbase, "the first transaction, %s, is not a coinbase", b.Txs[0].ID)
	}
	for i, tx := range b.Txs[1:] {
		if tx.IsCoinbase() {
			return refuse(CheckCoinbase, "transaction %d, %s, is a second coinbase", i+1, tx.ID)
		}
	}
	if !r.TrustProof {
		root, mutated := merkleRoot(b.Txs)
		if mutated {
			return refuse(CheckMerkleRoot, "the transaction list repeats a subtree, which leaves the merkle root unchanged (CVE-2012-2459)")
		}
		if root != b.Header.MerkleRoot {
			return refuse(CheckMerkleRoot, "the transactions hash to %s, the header says %s", root, b.Header.MerkleRoot)
		}
	}
	seen := make(map[chainhash.Hash]int, len(b.Txs))
	for i, tx := range b.Txs {
		if first, dup := seen[tx.ID]; dup {
			return refuse(CheckDuplicateTx, "transactions %d and %d are both %s", first, i, tx.ID)
		}
		seen[tx.ID] = i
	}
	for _, tx := range b.Txs {
		if err := CheckOutputValues(tx); err != nil {
			return refuse(CheckOutputValue, "%s", strings.TrimPrefix(err.Error(), "chain: "))
		}
	}
	// The genesis block is fixed by the network, not built under its rules
	// (simnet's coinbase holds no height though BIP34 is active from 0).
	if height > 0 && int64(height) >= int64(r.Params.BIP0034Height) {
		if err := blockchain.CheckSerializedHeight(btcutil.NewTx(b.Txs[0].Msg), int32(height)); err != nil {
			return refuse(CheckCoinbaseHeight, "%v", err)
		}
	}
	return nil
}

// merkleRoot is the root of the tree over the txids, and whether a level
// pairs a node with an equal one. A valid block never does: equal siblings
// mean a repeated transaction or subtree, which is how CVE-2012-2459 makes
// a second transaction list with the same root (a level of odd length
// pairs its last node with itself, so repeating it changes nothing).
func merkleRoot(txs []*Tx) (root chainhash.Hash, mutated bool) {
	level := make([]chainhash.Hash, len(txs))
	for i, tx := range txs {
		level[i] = tx.ID
	}
	for len(level) > 1 {
		for i := 0; i+1 < len(level); i += 2 {
			mutated = mutated || level[i] == level[i+1]
		}
		if len(level)%2 == 1 {
			level = append(level, level[len(level)-1])
		}
		for i := 0; i < len(level); i += 2 {
			level[i/2] = blockchain.HashMerkleBranches(&level[i], &level[i+1])
		}
		level = level[:len(level)/2]
	}
	return level[0], mutated
}
