package electrum

import (
	"bufio"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// A merkle branch leads from every leaf to the root of the tree, for
// trees of every shape up to 9 leaves (odd levels pair their last leaf
// with itself); the root is computed here pairwise by hand.
func TestMerkleBranch(t *testing.T) {
	for n := 1; n <= 9; n++ {
		leaves := make([]chainhash.Hash, n)
		for i := range leaves {
			leaves[i] = chainhash.DoubleHashH([]byte{byte(i)})
		}
		want := rootByHand(leaves)
		for i := range leaves {
			branch, root := merkleBranch(leaves, i)
			if root != want {
				t.Fatalf("%d leaves: root %s, want %s", n, root, want)
			}
			h, pos := leaves[i], i
			for _, sib := range branch {
				if pos&1 == 0 {
					h = chainhash.DoubleHashH(append(append([]byte{}, h[:]...), sib[:]...))
				} else {
					h = chainhash.DoubleHashH(append(append([]byte{}, sib[:]...), h[:]...))
				}
				pos >>= 1
			}
			if h != want {
				t.Fatalf("%d leaves: the branch of leaf %d leads to %s, not the root", n, i, h)
			}
		}
	}
}

// A checkpoint proof built from its leaf's segment and the kept roots of
// every segment is the branch and root of the whole tree, for every leaf
// of trees of 1 to 70 leaves in segments of 4 and 8 (the segment at the
// end full, partial, or a single leaf), asked in an order that makes the
// kept roots change with the checkpoint.
func TestCheckpointBranchIsTheWholeTreesBranch(t *testing.T) {
	all := make([]chainhash.Hash, 70)
	for i := range all {
		all[i] = chainhash.DoubleHashH([]byte{byte(i), 'c', 'p'})
	}
	for _, depth := range []int{2, 3} {
		var trees checkpointTrees
		for _, n := range []int{70, 1, 5, 8, 9, 33, 17, 16, 64, 65, 40, 41, 40} {
			leaves := all[:n]
			for i := range leaves {
				wantBranch, wantRoot := merkleBranch(leaves, i)
				branch, root := trees.branch(leaves, i, depth)
				if root != wantRoot || !slices.Equal(branch, wantBranch) {
					t.Fatalf("segments of %d, %d leaves, leaf %d: branch %v root %s; the whole tree's %v %s",
						1<<depth, n, i, branch, root, wantBranch, wantRoot)
				}
			}
		}
	}
}

func rootByHand(level []chainhash.Hash) chainhash.Hash {
	for len(level) > 1 {
		var next []chainhash.Hash
		for i := 0; i < len(level); i += 2 {
			j := i + 1
			if j == len(level) {
				j = i
			}
			next = append(next, chainhash.DoubleHashH(append(append([]byte{}, level[i][:]...), level[j][:]...)))
		}
		level = next
	}
	return level[0]
}

func TestVersionNegotiation(t *testing.T) {
	for _, c := range []struct {
		lo, hi, want string
	}{
		{"1.4", "1.4", "1.4"}, {"1.4", "1.5", "1.5"}, {"1.2", "1.4.2", "1.4"}, {"1.5", "2.0", "1.5"}, {"1.1", "1.3", ""}, {"1.6", "1.9", ""},
	} {
		got := ""
		for _, v := range []string{protocolMax, protocolMin} {
			if versionLE(c.lo, v) && versionLE(v, c.hi) {
				got = v
				break
			}
		}
		if got != c.want {
			t.Errorf("[%s, %s]: %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
}

// The status of a history is the sha256 of its "txid:height:" entries;
// of none, null. The vector is computed with sha256sum over the text.
func TestStatus(t *testing.T) {
	if status(nil) != nil {
		t.Fatal("an empty history has a status")
	}
	a, _ := chainhash.NewHashFromStr(strings.Repeat("11", 32))
	got := status([]histEntry{{txid: *a, height: 5}, {txid: *a, height: -1}})
	// printf '%s:5:%s:-1:' 1111…11 1111…11 | sha256sum
	const want = "a1dccd0430ee2f5862ce104cc55d9eefe35fabbdfe0fce796b6e3e28dbf3df20"
	if got != want {
		t.Fatalf("status %v, want %s", got, want)
	}
}

func TestReadLine(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader("short\n"+strings.Repeat("x", 100)+"\nlast"), 16)
	if line, err := readLine(r, 50); err != nil || string(line) != "short\n" {
		t.Fatalf("%q %v", line, err)
	}
	if _, err := readLine(r, 50); !errors.Is(err, errLineTooLong) {
		t.Fatalf("a 101-byte line under a limit of 50: %v", err)
	}
}

// BenchmarkCheckpointProof proves a header below a checkpoint of mainnet's
// size, over the whole tree and from the kept segments' roots.
func BenchmarkCheckpointProof(b *testing.B) {
	leaves := make([]chainhash.Hash, 870_000)
	for i := range leaves {
		leaves[i] = chainhash.DoubleHashH([]byte{byte(i), byte(i >> 8), byte(i >> 16)})
	}
	b.Run("whole-tree", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			merkleBranch(leaves, i*7919%len(leaves))
		}
	})
	b.Run("segments", func(b *testing.B) {
		var trees checkpointTrees
		trees.branch(leaves, 0, checkpointDepth) // the roots, kept once
		for i := 0; b.Loop(); i++ {
			trees.branch(leaves, i*7919%len(leaves), checkpointDepth)
		}
	})
}
