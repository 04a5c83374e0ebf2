package chain

import (
	"math/rand/v2"
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// levelRoot is the merkle root computed level by level, with every pair
// of equal siblings seen (the form the tree a leaf at a time must match).
func levelRoot(leaves []chainhash.Hash) (chainhash.Hash, bool) {
	level := append([]chainhash.Hash(nil), leaves...)
	mutated := false
	for len(level) > 1 {
		for i := 0; i+1 < len(level); i += 2 {
			mutated = mutated || level[i] == level[i+1]
		}
		if len(level)%2 == 1 {
			level = append(level, level[len(level)-1])
		}
		next := make([]chainhash.Hash, len(level)/2)
		for i := range next {
			next[i] = blockchain.HashMerkleBranches(&level[2*i], &level[2*i+1])
		}
		level = next
	}
	return level[0], mutated
}

// The tree built a leaf at a time has the level-by-level root for every
// count up to 600, and sees a repeated trailing run of any length as a
// mutation exactly when the level-by-level walk does.
func TestMerkleTree(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 600; n++ {
		leaves := make([]chainhash.Hash, n)
		for i := range leaves {
			for j := range leaves[i] {
				leaves[i][j] = byte(rng.Uint32())
			}
		}
		for _, list := range [][]chainhash.Hash{leaves, append(append([]chainhash.Hash{}, leaves...), leaves[n-1-rng.IntN(n):]...)} {
			var m MerkleTree
			for _, l := range list {
				m.Add(l)
			}
			root, mutated := m.Root()
			wantRoot, wantMutated := levelRoot(list)
			if root != wantRoot || mutated != wantMutated {
				t.Fatalf("%d leaves: root %s mutated %v, want %s %v", len(list), root, mutated, wantRoot, wantMutated)
			}
		}
	}
}
