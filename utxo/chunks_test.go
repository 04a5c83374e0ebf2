package utxo

import (
	"errors"
	"fmt"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo/model"
)

// inChunks is b given as chunks of size transactions, counting the walks
// the store makes over it.
func inChunks(b Block, size int, walks *int) Block {
	txs := b.Txs
	b.Txs = nil
	b.Chunks = func(fn func([]*chain.Tx) error) error {
		*walks++
		for i := 0; i < len(txs); i += size {
			if err := fn(txs[i:min(i+size, len(txs))]); err != nil {
				return err
			}
		}
		return nil
	}
	return b
}

// A chain connected with every block given in chunks of three
// transactions (so a transaction spends outputs of chunks before its own)
// ends in the store a chain of whole blocks makes; disconnecting the last
// hundred chunked blocks leaves what a shorter chain makes, and connecting
// them again the whole chain's store.
func TestChunkedBlocksConnectAsWhole(t *testing.T) {
	blocks := chainBlocks(t, btcChain)
	want := freshSummary(t, onMemory, blocks)
	walks := 0
	chunked := make([]Block, len(blocks))
	for i, b := range blocks {
		chunked[i] = inChunks(b, 3, &walks)
	}
	db := newStore(t, Options{})
	connectAll(t, db, chunked)
	if got := summary(t, db); got != want {
		t.Fatalf("chunked: %+v\nwhole: %+v", got, want)
	}
	if walks < 2*len(blocks) {
		t.Fatalf("%d walks over %d blocks: the chunks were not read per step", walks, len(blocks))
	}
	mustVerify(t, db)
	tip := len(chunked) - 1
	for h := tip; h > tip-100; h-- {
		if err := db.DisconnectBlock(ctx, chunked[h]); err != nil {
			t.Fatalf("disconnect %d: %v", h, err)
		}
	}
	if got, want := summary(t, db), summaryWithUnmined(t, blocks[:tip-99], blocks[tip-99:]); got != want {
		t.Fatalf("after disconnecting 100 chunked blocks: %+v\nshorter chain, sent the rest unmined: %+v", got, want)
	}
	connectAll(t, db, chunked[tip-99:])
	if got := summary(t, db); got != want {
		t.Fatalf("after reconnecting: %+v\nwhole: %+v", got, want)
	}
	mustVerify(t, db)
}

// A block whose last chunk spends an output that does not exist is
// refused, and the spends and creates of its earlier chunks are undone:
// the store is as it was, and the block's good transactions connect in a
// block of their own afterwards.
func TestChunkedBlockFailingLateChangesNothing(t *testing.T) {
	db := newStore(t, Options{})
	genesis := Block{Hash: chainhash.DoubleHashH([]byte("chunked 0")), Height: 0, Txs: []*chain.Tx{coinbaseTx("chunked 0", 1, 50e8)}}
	connectAll(t, db, []Block{genesis})
	base := spendTx("chunked base", []wire.OutPoint{{Hash: chainhash.Hash{1}}}, 4, 1e8)
	mustCreate(t, db, base, 1)
	before := summary(t, db)
	cb := coinbaseTx("chunked cb", 1, 50e8)
	txs := []*chain.Tx{cb}
	for vout := range 4 {
		txs = append(txs, spendTx(fmt.Sprintf("chunked spend %d", vout), []wire.OutPoint{out(base, uint32(vout))}, 2, 1e8))
	}
	good := append([]*chain.Tx{}, txs...)
	txs = append(txs, spendTx("spends nothing", []wire.OutPoint{{Hash: chainhash.Hash{9}, Index: 0}}, 1, 1e8))
	walks := 0
	bad := inChunks(Block{Hash: chainhash.DoubleHashH([]byte("chunked 1")), PrevHash: genesis.Hash, Height: 1, Txs: txs}, 2, &walks)
	err := db.ConnectBlock(ctx, bad)
	if !errors.Is(err, model.ErrTxNotFound) {
		t.Fatalf("a block spending a missing output in its last chunk: %v", err)
	}
	if after := summary(t, db); after != before {
		t.Fatalf("the refused block changed the store:\n got %+v\nwant %+v", after, before)
	}
	if spenders := spendersOf(mustGet(t, db, base.ID)); len(spenders) != 0 {
		t.Fatalf("after the refused block, the outputs it spent are still spent by %v", spenders)
	}
	mustVerify(t, db)
	connectAll(t, db, []Block{inChunks(Block{Hash: chainhash.DoubleHashH([]byte("chunked 1 good")), PrevHash: genesis.Hash, Height: 1, Txs: good}, 2, &walks)})
	if after := summary(t, db); after.Utxos != before.Utxos+8+1 {
		t.Fatalf("after the good block: %+v (before %+v)", after, before)
	}
}
