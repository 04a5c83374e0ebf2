package electrum

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
)

// MaxHeaders is the most headers one blockchain.block.headers answer
// holds, the protocol's usual chunk.
const MaxHeaders = 2016

// header is the 80-byte header of the chain's block at height: from what
// the store keeps of it, or the block store's copy of a block the store
// connected without its header.
func (s *Server) header(ctx context.Context, height uint32) ([]byte, chainhash.Hash, error) {
	info, ok, err := s.reads.BlockAt(ctx, height)
	if err != nil {
		return nil, chainhash.Hash{}, err
	}
	if !ok {
		return nil, chainhash.Hash{}, badRequest("no block at height %d", height)
	}
	h := wire.BlockHeader{Version: info.Version, PrevBlock: info.PrevHash, MerkleRoot: info.MerkleRoot,
		Bits: info.Bits, Nonce: info.Nonce}
	h.Timestamp = timeOf(info.Time)
	var buf bytes.Buffer
	if err := h.Serialize(&buf); err != nil {
		return nil, chainhash.Hash{}, err
	}
	if h.BlockHash() == info.Hash {
		return buf.Bytes(), info.Hash, nil
	}
	if bs := s.reads.BlockStore(); bs != nil {
		raw, hash, ok, err := bs.Block(height)
		if err != nil {
			return nil, chainhash.Hash{}, err
		}
		if ok && hash == info.Hash && len(raw) >= 80 {
			return raw[:80], hash, nil
		}
	}
	return nil, chainhash.Hash{}, fmt.Errorf("the store holds no header of block %d (%s)", height, info.Hash)
}

// tip is the store's tip.
func (s *Server) tip(ctx context.Context) (uint32, error) {
	tip, ok, err := s.reads.Tip(ctx)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, badRequest("the store holds no block yet")
	}
	return tip.Height, nil
}

func (c *conn) headersSubscribe(ctx context.Context) (any, error) {
	height, err := c.s.tip(ctx)
	if err != nil {
		return nil, err
	}
	raw, hash, err := c.s.header(ctx, height)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.headers, c.tipSent = true, hash.String()
	c.mu.Unlock()
	return headerNotice{Hex: hex.EncodeToString(raw), Height: height}, nil
}

type headerNotice struct {
	Hex    string `json:"hex"`
	Height uint32 `json:"height"`
}

func (s *Server) blockHeader(ctx context.Context, p params) (any, error) {
	var height, cp uint32
	if err := p.need(0, "height", &height); err != nil {
		return nil, err
	}
	if _, err := p.get(1, "cp_height", &cp); err != nil {
		return nil, err
	}
	raw, _, err := s.header(ctx, height)
	if err != nil {
		return nil, err
	}
	if cp == 0 {
		return hex.EncodeToString(raw), nil
	}
	proof, err := s.checkpointProof(ctx, height, cp)
	if err != nil {
		return nil, err
	}
	return map[string]any{"header": hex.EncodeToString(raw), "root": proof.root, "branch": proof.branch}, nil
}

func (s *Server) blockHeaders(ctx context.Context, p params) (any, error) {
	var start, count, cp uint32
	if err := p.need(0, "start_height", &start); err != nil {
		return nil, err
	}
	if err := p.need(1, "count", &count); err != nil {
		return nil, err
	}
	if _, err := p.get(2, "cp_height", &cp); err != nil {
		return nil, err
	}
	tip, err := s.tip(ctx)
	if err != nil {
		return nil, err
	}
	count = min(count, MaxHeaders)
	if start > tip {
		count = 0
	} else {
		count = min(count, tip-start+1)
	}
	var buf bytes.Buffer
	for h := start; h < start+count; h++ {
		raw, _, err := s.header(ctx, h)
		if err != nil {
			return nil, err
		}
		buf.Write(raw)
	}
	out := map[string]any{"count": count, "hex": hex.EncodeToString(buf.Bytes()), "max": MaxHeaders}
	if cp != 0 && count > 0 {
		proof, err := s.checkpointProof(ctx, start+count-1, cp)
		if err != nil {
			return nil, err
		}
		out["root"], out["branch"] = proof.root, proof.branch
	}
	return out, nil
}

type proof struct {
	root   string
	branch []string
}

// checkpointProof proves the header at height is in the merkle tree of
// the block hashes 0 to cp, whose root a client keeps as a checkpoint.
func (s *Server) checkpointProof(ctx context.Context, height, cp uint32) (proof, error) {
	tip, err := s.tip(ctx)
	if err != nil {
		return proof{}, err
	}
	if height > cp || cp > tip {
		return proof{}, badRequest("header height %d must be <= cp_height %d, which must be <= the tip %d", height, cp, tip)
	}
	hashes, err := s.hashes.upTo(ctx, s, cp)
	if err != nil {
		return proof{}, err
	}
	branch, root := s.checkpoints.branch(hashes, int(height), checkpointDepth)
	return proof{root: root.String(), branch: hashStrings(branch)}, nil
}

// checkpointDepth is the levels of a checkpoint's tree a proof computes
// from the block hashes: the branch's lower part, from the 2,048 leaves of
// the proved header's segment. The segments' roots, above, are computed
// once for a checkpoint and kept, so a proof near mainnet's tip hashes
// about 2,000 pairs rather than the 800,000 of the whole tree; a wallet
// asks for one with each chunk of headers below its checkpoint.
const checkpointDepth = 11

// checkpointTrees keeps the segments' roots of the last checkpoint
// proved, known by its height and block hash.
type checkpointTrees struct {
	mu    sync.Mutex
	cp    int
	hash  chainhash.Hash
	roots []chainhash.Hash
}

// branch is merkleBranch(leaves, i) for a checkpoint's block hashes,
// computed from the segment of leaf i (2^depth leaves) and the kept roots
// of every segment.
func (t *checkpointTrees) branch(leaves []chainhash.Hash, i, depth int) ([]chainhash.Hash, chainhash.Hash) {
	segment := 1 << depth
	if len(leaves) <= segment {
		return merkleBranch(leaves, i)
	}
	t.mu.Lock()
	if t.cp != len(leaves)-1 || t.hash != leaves[len(leaves)-1] || t.roots == nil {
		t.roots = t.roots[:0]
		for start := 0; start < len(leaves); start += segment {
			_, root := segmentBranch(leaves[start:min(start+segment, len(leaves))], 0, depth)
			t.roots = append(t.roots, root)
		}
		t.cp, t.hash = len(leaves)-1, leaves[len(leaves)-1]
	}
	upper, root := merkleBranch(t.roots, i/segment)
	t.mu.Unlock()
	start := i / segment * segment
	lower, _ := segmentBranch(leaves[start:min(start+segment, len(leaves))], i-start, depth)
	return append(lower, upper...), root
}

// segmentBranch is the lower depth levels of a tree of more leaves than
// these, which begin at a multiple of 2^depth: the branch from leaf i and
// the node above them all. Every level pairs an odd last node with itself,
// a lone one too, as the whole tree's level, whose other nodes are even
// in number, does.
func segmentBranch(leaves []chainhash.Hash, i, depth int) (branch []chainhash.Hash, root chainhash.Hash) {
	level := append([]chainhash.Hash(nil), leaves...)
	for range depth {
		if len(level)%2 == 1 {
			level = append(level, level[len(level)-1])
		}
		branch = append(branch, level[i^1])
		level, i = pairUp(level), i/2
	}
	return branch, level[0]
}

// hashCache holds the chain's block hashes by height, for checkpoint
// proofs; a block connected at a height drops the hashes from there up.
// The block's announcement may come well after the store took it (the
// daemon announces from a queue of its own), so upTo also checks the
// highest kept hash it hands out against the store: a block names its
// parent, so when that one is the store's, so are those below it.
type hashCache struct {
	mu     sync.Mutex
	hashes []chainhash.Hash
}

// upTo is the hashes of the blocks 0 to height, a copy: the cache's own
// are cut and appended to by later calls.
func (c *hashCache) upTo(ctx context.Context, s *Server, height uint32) ([]chainhash.Hash, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.hashes); n > 0 {
		at := min(height, uint32(n-1))
		info, ok, err := s.reads.BlockAt(ctx, at)
		if err != nil {
			return nil, err
		}
		if !ok || info.Hash != c.hashes[at] {
			c.hashes = nil // a reorganisation not yet announced
		}
	}
	for h := uint32(len(c.hashes)); h <= height; h++ {
		if h%1000 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		info, ok, err := s.reads.BlockAt(ctx, h)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, badRequest("no block at height %d", h)
		}
		c.hashes = append(c.hashes, info.Hash)
	}
	return slices.Clone(c.hashes[:height+1]), nil
}

// dropFrom forgets the hashes from height up: a block was connected
// there.
func (c *hashCache) dropFrom(height uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int(height) < len(c.hashes) {
		c.hashes = c.hashes[:height]
	}
}

// merkleBranch is Bitcoin's merkle tree over leaves (the last of an odd
// level paired with itself): the root, and the hashes that lead from leaf
// i to it, lowest first.
func merkleBranch(leaves []chainhash.Hash, i int) (branch []chainhash.Hash, root chainhash.Hash) {
	level := append([]chainhash.Hash(nil), leaves...)
	for len(level) > 1 {
		if len(level)%2 == 1 {
			level = append(level, level[len(level)-1])
		}
		branch = append(branch, level[i^1])
		level, i = pairUp(level), i/2
	}
	return branch, level[0]
}

// pairUp is the level above level, of even length: each pair's hash.
func pairUp(level []chainhash.Hash) []chainhash.Hash {
	next := make([]chainhash.Hash, len(level)/2)
	for k := range next {
		var pair [64]byte
		copy(pair[:32], level[2*k][:])
		copy(pair[32:], level[2*k+1][:])
		next[k] = chainhash.DoubleHashH(pair[:])
	}
	return next
}

// hashStrings are hashes as the protocol prints them: reversed hex, as
// txids are.
func hashStrings(hs []chainhash.Hash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.String()
	}
	return out
}

func timeOf(unix int64) time.Time { return time.Unix(unix, 0) }

func hexOf(b []byte) string { return hex.EncodeToString(b) }

func unhex(s string) ([]byte, error) { return hex.DecodeString(s) }

// blockHashOf is the hash of an 80-byte header, as the protocol prints it.
func blockHashOf(header []byte) string { return chainhash.DoubleHashH(header).String() }
