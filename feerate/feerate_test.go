package feerate

import (
	"context"
	"reflect"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// chainOf is a Source holding the given blocks (by height; a missing
// height is a block whose fees are not held) and mempool.
type chainOf struct {
	tip     uint32
	blocks  map[uint32][]Tx
	hashes  map[uint32]chainhash.Hash
	mempool []Tx
	reads   int
}

func (c *chainOf) TipHeight(context.Context) (uint32, bool, error) {
	return c.tip, c.blocks != nil, nil
}

func (c *chainOf) BlockTxs(_ context.Context, h uint32) (chainhash.Hash, []Tx, bool, error) {
	c.reads++
	txs, ok := c.blocks[h]
	return c.hashes[h], txs, ok, nil
}

func (c *chainOf) BlockHash(_ context.Context, h uint32) (chainhash.Hash, bool, error) {
	_, ok := c.blocks[h]
	return c.hashes[h], ok, nil
}

func (c *chainOf) Mempool(context.Context) ([]Tx, error) { return c.mempool, nil }

// at50, at20 and at5 are 600,000-vbyte transactions paying 50, 20 and 5
// sat/vB.
var (
	at50 = Tx{Fee: 30_000_000, VSize: 600_000}
	at20 = Tx{Fee: 12_000_000, VSize: 600_000}
	at5  = Tx{Fee: 3_000_000, VSize: 600_000}
)

func estimate(t *testing.T, e *Estimator, target int) Rate {
	t.Helper()
	r, err := e.Estimate(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestEstimateFromMempool(t *testing.T) {
	src := &chainOf{mempool: []Tx{at5, at50, at20}}
	e := New(src)
	// One block holds at50 and not at20: a new transaction must beat 20
	// sat/vB; two blocks hold all three.
	if got := estimate(t, e, 1); got != 20_000 {
		t.Errorf("target 1: %d sat/kvB, want 20000", got)
	}
	if got := estimate(t, e, 2); got != MinRelay {
		t.Errorf("target 2: %d sat/kvB, want the floor %d", got, MinRelay)
	}
	if got := estimate(t, New(&chainOf{}), 3); got != MinRelay {
		t.Errorf("an empty store: %d, want %d", got, MinRelay)
	}
	if got := estimate(t, e, 0); got != 20_000 {
		t.Errorf("target 0 is target 1: got %d", got)
	}
}

func TestEstimateFromBlocks(t *testing.T) {
	// A block whose cheapest tenth of its size paid 2 sat/vB, and one
	// whose only transaction paid 8.
	cheap := append([]Tx{{Fee: 2000, VSize: 1000}}, repeat(Tx{Fee: 9000, VSize: 1000}, 9)...)
	dear := []Tx{{Fee: 8000, VSize: 1000}}
	src := &chainOf{tip: 9, blocks: map[uint32][]Tx{9: cheap, 8: cheap, 7: dear, 6: dear, 5: dear, 4: dear, 3: cheap, 2: cheap, 1: cheap, 0: cheap},
		hashes: map[uint32]chainhash.Hash{}}
	e := New(src)
	// Target 1 reads the last 6 blocks: 2,2,8,8,8,8, median 8.
	if got := estimate(t, e, 1); got != 8000 {
		t.Errorf("target 1: %d, want 8000", got)
	}
	// Target 5 reads 10: six of 2 and four of 8, median 2.
	if got := estimate(t, e, 5); got != 2000 {
		t.Errorf("target 5: %d, want 2000", got)
	}
	// A mempool that fills the next block wins over the blocks.
	src.mempool = []Tx{at50, at20}
	if got := estimate(t, e, 1); got != 20_000 {
		t.Errorf("target 1 with a full mempool: %d, want 20000", got)
	}
	// A block replaced at the same height is read again.
	src.mempool = nil
	src.blocks[9], src.blocks[8], src.hashes[9] = dear, dear, chainhash.Hash{9}
	estimate(t, e, 5)
	if got := e.blocks[9].rate; got != 8000 {
		t.Errorf("block 9, replaced: %d, want 8000", got)
	}
	if got := e.blocks[8].rate; got != 2000 {
		t.Errorf("block 8, the same block: %d, want its kept 2000", got)
	}
}

func repeat(t Tx, n int) []Tx {
	out := make([]Tx, n)
	for i := range out {
		out[i] = t
	}
	return out
}

func TestHistogram(t *testing.T) {
	got := Histogram([]Tx{at5, at50, at20, {Fee: 1000, VSize: 40_000}})
	want := []Bin{{50_000, 600_000}, {20_000, 600_000}, {5000, 600_000}, {25, 40_000}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	// Small transactions share a bin until it holds 100,000 vbytes.
	small := repeat(Tx{Fee: 40_000, VSize: 40_000}, 3)
	if got, want := Histogram(small), []Bin{{1000, 120_000}}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := Histogram(nil); len(got) != 0 {
		t.Errorf("empty mempool: %v", got)
	}
}

func TestRateText(t *testing.T) {
	if got := Rate(1000).BTCPerKB(); got != "0.00001000" {
		t.Errorf("got %q", got)
	}
	if got := Rate(123_456_789_000).BTCPerKB(); got != "1234.56789000" {
		t.Errorf("got %q", got)
	}
}
