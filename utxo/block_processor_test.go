package utxo

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/internal/testdata"
	"github.com/utxostore/utxostore/utxo/model"
	"github.com/utxostore/utxostore/utxo/record"
)

// freshSummary is the summary of a new store on open that connected blocks.
func freshSummary(t *testing.T, open engineOpener, blocks []Block) Summary {
	t.Helper()
	db := newStoreOn(t, open, Options{})
	connectAll(t, db, blocks)
	return summary(t, db)
}

// summaryWithUnmined is the summary of a new store that connected blocks
// and was then sent the transactions of unmined, but their coinbases, as
// a validator stores them: Spend, then Create. A store that disconnected
// the blocks of unmined holds them so.
func summaryWithUnmined(t *testing.T, blocks, unmined []Block) Summary {
	t.Helper()
	db := newStore(t, Options{})
	connectAll(t, db, blocks)
	for _, b := range unmined {
		for _, tx := range b.Txs[1:] {
			if _, err := db.Spend(ctx, tx); err != nil {
				t.Fatalf("spend %s of block %d: %v", tx.ID, b.Height, err)
			}
			mustCreate(t, db, tx, db.GetBlockHeight()+1)
		}
	}
	return summary(t, db)
}

func TestDisconnectAndReconnectLast100Blocks(t *testing.T) {
	blocks := chainBlocks(t, btcChain)
	db := newStore(t, Options{})
	connectAll(t, db, blocks)
	before := summary(t, db)

	tip := len(blocks) - 1
	for h := tip; h > tip-100; h-- {
		if err := db.DisconnectBlock(ctx, blocks[h]); err != nil {
			t.Fatalf("disconnect %d: %v", h, err)
		}
	}
	if _, ok, err := db.BlockAt(ctx, uint32(tip)); ok || err != nil {
		t.Fatalf("BlockAt(%d) after its disconnect: ok %v, %v", tip, ok, err)
	}
	if info, ok, err := db.BlockAt(ctx, uint32(tip-100)); !ok || err != nil || info.Hash != blocks[tip-100].Hash {
		t.Fatalf("BlockAt(%d): %+v %v %v", tip-100, info, ok, err)
	}
	if c, err := db.ChainSummary(ctx); err != nil || c.Blocks != uint64(tip-99) || c.Txs != summary(t, db).Txs ||
		!c.HasTip || c.Tip.Height != uint32(tip-100) || c.Tip.Hash != blocks[tip-100].Hash {
		t.Fatalf("ChainSummary: %+v %v", c, err)
	}
	// The disconnected blocks' transactions are unmined now, holding
	// their inputs: outside the set, and its outputs they spend out of
	// the digest, though in Bitcoin Core's statistics.
	if got, want := summary(t, db), summaryWithUnmined(t, blocks[:tip-99], blocks[tip-99:]); got != want {
		t.Fatalf("after disconnecting 100 blocks: %+v\nfresh import of the shorter chain, sent the rest unmined: %+v", got, want)
	}
	mustVerify(t, db)
	connectAll(t, db, blocks[tip-99:])
	mustVerify(t, db)
	if after := summary(t, db); after != before {
		t.Fatalf("after reconnecting: %+v\nbefore: %+v", after, before)
	}
}

func TestDisconnectRefusesANonTipBlock(t *testing.T) {
	blocks := chainBlocks(t, btcChain)[:20]
	db := newStore(t, Options{})
	connectAll(t, db, blocks)
	before := summary(t, db)
	if err := db.DisconnectBlock(ctx, blocks[10]); !errors.Is(err, ErrNotTip) {
		t.Fatalf("disconnecting block 10 of 20: got %v, want ErrNotTip", err)
	}
	if err := db.ConnectBlock(ctx, blocks[5]); !errors.Is(err, ErrNotTip) {
		t.Fatalf("connecting block 5 on top of 19: got %v, want ErrNotTip", err)
	}
	if after := summary(t, db); after != before {
		t.Fatal("a refused block changed the store")
	}
}

// latestSpendingBlock returns the height of the last block with a
// transaction that spends a non-coinbase or matured output.
func latestSpendingBlock(blocks []Block) int {
	for h := len(blocks) - 1; h > 0; h-- {
		if len(blocks[h].Txs) > 1 {
			return h
		}
	}
	return -1
}

// competingBranch builds n blocks on top of parent whose first block double
// spends the first input of victim (spent on the main branch) to a different
// output, and which carry their own coinbases.
func competingBranch(t *testing.T, parent Block, n int, victim *chain.Tx) []Block {
	t.Helper()
	var branch []Block
	prev := parent
	for i := 0; i < n; i++ {
		height := prev.Height + 1
		cb := coinbaseTx(fmt.Sprintf("branch-%d-%d", n, height), 1, 50e8)
		txs := []*chain.Tx{cb}
		if i == 0 {
			double := spendTx(fmt.Sprintf("double-%d", n), []wire.OutPoint{victim.Msg.TxIn[0].PreviousOutPoint}, 1, 1e8)
			txs = append(txs, double)
		}
		hash := chainhash.DoubleHashH([]byte(fmt.Sprintf("branch %d block %d", n, height)))
		b := Block{Hash: hash, PrevHash: prev.Hash, Height: height, Txs: txs}
		branch = append(branch, b)
		prev = b
	}
	return branch
}

func reversed(blocks []Block) []Block {
	out := make([]Block, len(blocks))
	for i, b := range blocks {
		out[len(blocks)-1-i] = b
	}
	return out
}

func TestReorgToCompetingBranchesAndBack(t *testing.T) {
	testReorgToCompetingBranchesAndBack(t, onMemory)
}

func testReorgToCompetingBranchesAndBack(t *testing.T, open engineOpener) {
	// The first 1,000 real blocks hold the chain's first spends, and keep
	// this test quick on the slower engines.
	all := chainBlocks(t, btcChain)[:1000]
	spender := latestSpendingBlock(all)
	if spender < 0 {
		t.Fatal("no spending block in the chain")
	}
	for _, n := range []int{1, 3, 6} {
		t.Run(fmt.Sprintf("depth%d", n), func(t *testing.T) {
			fork := spender - 1 // the main branch is fork+1 .. fork+n
			main := all[fork+1 : fork+1+n]
			victim := all[spender].Txs[1]
			branch := competingBranch(t, all[fork], n, victim)
			base := all[:fork+1]

			db := newStoreOn(t, open, Options{})
			connectAll(t, db, all[:fork+1+n])
			wantMain := summary(t, db)
			wantBranch := freshSummary(t, open, append(append([]Block(nil), base...), branch...))

			for round := 0; round < 2; round++ {
				if err := reorg(db, reversed(main), branch); err != nil {
					t.Fatalf("round %d, to the branch: %v", round, err)
				}
				if got := summary(t, db); got != wantBranch {
					t.Fatalf("round %d on the branch: %+v\nfresh import of the branch: %+v", round, got, wantBranch)
				}
				if err := reorg(db, reversed(branch), main); err != nil {
					t.Fatalf("round %d, back to main: %v", round, err)
				}
				mustVerify(t, db)
				if got := summary(t, db); got != wantMain {
					t.Fatalf("round %d back on main: %+v\nwant %+v", round, got, wantMain)
				}
			}
		})
	}
}

// reorg moves db from its tip to another branch as blockpath.Path.Reorg
// does: checked, then disconnected tip first, then connected.
func reorg(db *DB, disconnect, connect []Block) error {
	tips := make([]Tip, len(disconnect))
	for i, b := range disconnect {
		tips[i] = Tip{Height: b.Height, Hash: b.Hash}
	}
	if err := db.CanDisconnect(ctx, tips); err != nil {
		return err
	}
	for _, b := range disconnect {
		if err := db.DisconnectBlock(ctx, b); err != nil {
			return err
		}
	}
	for _, b := range connect {
		if err := db.ConnectBlock(ctx, b); err != nil {
			return err
		}
	}
	return nil
}

// TestAReorgOfBlocksOffTheChainChangesNothing: a reorganisation whose
// blocks to disconnect are the chain's tip and then another chain's block
// is refused before the tip is disconnected.
func TestAReorgOfBlocksOffTheChainChangesNothing(t *testing.T) {
	all := chainBlocks(t, btcChain)[:1000]
	spender := latestSpendingBlock(all)
	fork := spender - 1
	main := all[fork+1 : fork+4]
	branch := competingBranch(t, all[fork], 3, all[spender].Txs[1])
	db := newStoreOn(t, onMemory, Options{})
	connectAll(t, db, all[:fork+4])
	want := summary(t, db)
	disconnect := reversed(main)
	disconnect[1] = branch[1] // the same height, another chain
	if err := reorg(db, disconnect, branch); !errors.Is(err, ErrNotTip) {
		t.Fatalf("a reorganisation disconnecting another chain's block: %v, want ErrNotTip", err)
	}
	if got := summary(t, db); got != want {
		t.Fatalf("after the refused reorganisation: %+v\nwant %+v", got, want)
	}
	mustVerify(t, db)
}

// TestBlockMakesUnminedDoubleSpenderConflicting: an unmined transaction and
// its child spend an output; a block then spends the same output. The unmined
// pair becomes conflicting and the block wins; disconnecting the block
// restores them.
func TestBlockMakesUnminedDoubleSpenderConflicting(t *testing.T) {
	testBlockMakesUnminedDoubleSpenderConflicting(t, onMemory)
}

func testBlockMakesUnminedDoubleSpenderConflicting(t *testing.T, open engineOpener) {
	db := newStoreOn(t, open, Options{})
	cb := coinbaseTx("cb", 2, 50e8)
	genesis := Block{Hash: chainhash.DoubleHashH([]byte("b0")), Height: 0, Txs: []*chain.Tx{cb}}
	connectAll(t, db, []Block{genesis})
	prev := genesis
	for h := uint32(1); h <= 100; h++ { // mature the coinbase
		b := Block{Hash: chainhash.DoubleHashH([]byte(fmt.Sprint("b", h))), PrevHash: prev.Hash, Height: h, Txs: []*chain.Tx{coinbaseTx(fmt.Sprint("cb", h), 1, 50e8)}}
		connectAll(t, db, []Block{b})
		prev = b
	}

	unmined := spendTx("unmined", []wire.OutPoint{out(cb, 0)}, 2, 10e8)
	child := spendTx("child", []wire.OutPoint{out(unmined, 1)}, 1, 5e8)
	for _, tx := range []*chain.Tx{unmined, child} {
		mustCreate(t, db, tx, db.GetBlockHeight())
		if _, err := db.Spend(ctx, tx); err != nil {
			t.Fatalf("spend %s: %v", tx.ID, err)
		}
	}
	winner := spendTx("winner", []wire.OutPoint{out(cb, 0)}, 1, 49e8)
	block := Block{Hash: chainhash.DoubleHashH([]byte("b101")), PrevHash: prev.Hash, Height: 101, Txs: []*chain.Tx{coinbaseTx("cb101", 1, 50e8), winner}}
	if err := db.ConnectBlock(ctx, block); err != nil {
		t.Fatal(err)
	}
	for _, tx := range []*chain.Tx{unmined, child} {
		if !mustGet(t, db, tx.ID).Conflicting {
			t.Fatalf("%s is not conflicting after the block spent its input", tx.ID)
		}
	}
	if sd := mustGet(t, db, cb.ID).Outputs[0].SpendingData; sd == nil || sd.TxID != winner.ID {
		t.Fatalf("output spent by %v, want the block's transaction", sd)
	}
	// The parent's conflicting children: the loser it records, the block's
	// transaction now spending its output, and the loser's descendants.
	children, err := db.GetConflictingChildren(ctx, cb.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantSet(t, "conflicting children of the parent", children, unmined.ID, winner.ID, child.ID)
	if kids, _ := db.GetConflictingChildren(ctx, unmined.ID); len(kids) != 1 || kids[0] != child.ID {
		t.Fatalf("conflicting children of the loser: %v", kids)
	}
	counter, err := db.GetCounterConflicting(ctx, winner.ID)
	if err != nil || len(counter) != 1 || counter[0] != winner.ID {
		t.Fatalf("counter-conflicting set of the winner: %v %v (the loser's spend is undone)", counter, err)
	}

	if err := db.DisconnectBlock(ctx, block); err != nil {
		t.Fatal(err)
	}
	for _, tx := range []*chain.Tx{unmined, child} {
		if mustGet(t, db, tx.ID).Conflicting {
			t.Fatalf("%s still conflicting after the block was disconnected", tx.ID)
		}
	}
	if sd := mustGet(t, db, cb.ID).Outputs[0].SpendingData; sd == nil || sd.TxID != unmined.ID {
		t.Fatalf("after disconnect the output is spent by %v, want the restored transaction", sd)
	}
	if sd := mustGet(t, db, unmined.ID).Outputs[1].SpendingData; sd == nil || sd.TxID != child.ID {
		t.Fatalf("the restored child does not spend its parent again: %v", sd)
	}
}

// bsvBlocks returns the two consecutive BSV blocks 384188 and 384189.
func bsvBlocks(t *testing.T) (*chain.Block, *chain.Block) {
	t.Helper()
	byHash := map[chainhash.Hash]*chain.Block{}
	for name, raw := range testdata.BSVBlocks(t) {
		b, err := chain.ParseBlock(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		byHash[b.Hash] = b
	}
	for _, b := range byHash {
		if parent, ok := byHash[b.PrevHash()]; ok {
			return parent, b
		}
	}
	t.Fatal("no two consecutive blocks among the BSV blocks")
	return nil, nil
}

func TestBSVConsecutiveBlocks(t *testing.T) {
	first, second := bsvBlocks(t)
	if len(first.Txs) != 1356 || len(second.Txs) != 564 {
		t.Fatalf("blocks of %d and %d txs, the README says 1356 and 564", len(first.Txs), len(second.Txs))
	}
	db := newStore(t, Options{})
	if err := db.SetBlockHeight(ctx, 384189); err != nil {
		t.Fatal(err)
	}
	present := map[chainhash.Hash]bool{}
	for h, b := range map[uint32]*chain.Block{384188: first, 384189: second} {
		for _, tx := range b.Txs {
			mustCreate(t, db, tx, h, mined(h))
			present[tx.ID] = true
		}
	}
	applied, refused := 0, 0
	for _, tx := range second.Txs[1:] {
		allPresent := true
		for _, in := range tx.Msg.TxIn {
			allPresent = allPresent && present[in.PreviousOutPoint.Hash]
		}
		before := inputStates(t, db, tx, present)
		spends, err := db.Spend(ctx, tx, WithBlockHeight(384189))
		if allPresent {
			if err != nil {
				t.Fatalf("%s spends only present outputs but failed: %v", tx.ID, err)
			}
			for vin, in := range tx.Msg.TxIn {
				sd := mustGet(t, db, in.PreviousOutPoint.Hash).Outputs[in.PreviousOutPoint.Index].SpendingData
				if sd == nil || sd.TxID != tx.ID || sd.Vin != uint32(vin) {
					t.Fatalf("input %d of %s not recorded as the spender: %v", vin, tx.ID, sd)
				}
			}
			applied++
			continue
		}
		wantCode(t, err, model.ErrTxNotFound)
		for _, sp := range spends {
			if !present[sp.TxID] && !errors.Is(sp.Err, model.ErrTxNotFound) {
				t.Fatalf("spend of absent %s:%d: %v, want TX_NOT_FOUND", sp.TxID, sp.Vout, sp.Err)
			}
		}
		if after := inputStates(t, db, tx, present); after != before {
			t.Fatalf("refused %s changed its present inputs:\nbefore %s\nafter  %s", tx.ID, before, after)
		}
		refused++
	}
	if applied == 0 || refused == 0 {
		t.Fatalf("applied %d, refused %d: the data should exercise both", applied, refused)
	}
	t.Logf("%d transactions of block 384189 spent outputs of 384188/384189, %d were refused with TX_NOT_FOUND", applied, refused)
}

// inputStates describes the present outputs tx spends.
func inputStates(t *testing.T, db *DB, tx *chain.Tx, present map[chainhash.Hash]bool) string {
	s := ""
	for _, in := range tx.Msg.TxIn {
		if present[in.PreviousOutPoint.Hash] {
			o := mustGet(t, db, in.PreviousOutPoint.Hash).Outputs[in.PreviousOutPoint.Index]
			s += fmt.Sprintf("%v;", o.SpendingData)
		}
	}
	return s
}

func TestPruningRemovesOnlyFullySpentTransactions(t *testing.T) {
	const retention = 10
	blocks := chainBlocks(t, btcChain)
	db := newStore(t, Options{BlockHeightRetention: retention})
	connectAll(t, db, blocks)
	tip := uint32(len(blocks) - 1)

	// Independently: the height at which each transaction became fully
	// spent, if it did.
	type txInfo struct {
		outputs, spent int
		fullyAt        uint32
	}
	info := map[chainhash.Hash]*txInfo{}
	for _, b := range blocks {
		for i, tx := range b.Txs {
			if i > 0 {
				for _, in := range tx.Msg.TxIn {
					p := info[in.PreviousOutPoint.Hash]
					p.spent++
					if p.spent == p.outputs {
						p.fullyAt = b.Height
					}
				}
			}
			info[tx.ID] = &txInfo{outputs: len(tx.Msg.TxOut)}
		}
	}
	gone, kept := 0, 0
	for txid, ti := range info {
		_, err := db.Get(ctx, txid)
		shouldBeGone := ti.spent == ti.outputs && ti.fullyAt+retention <= tip
		switch {
		case shouldBeGone && !errors.Is(err, model.ErrTxNotFound):
			t.Fatalf("%s fully spent at %d, retention passed at %d, still stored (%v)", txid, ti.fullyAt, tip, err)
		case !shouldBeGone && err != nil:
			t.Fatalf("%s (spent %d of %d, fully at %d) is gone: %v", txid, ti.spent, ti.outputs, ti.fullyAt, err)
		case shouldBeGone:
			gone++
		default:
			kept++
		}
	}
	if gone == 0 {
		t.Fatal("nothing was pruned")
	}
	if got, want := summary(t, db), referenceUTXOs(t, btcChain); got != want {
		t.Fatalf("pruning changed the UTXO set: %+v, want %+v", got, want)
	}
	t.Logf("pruned %d fully spent transactions, kept %d", gone, kept)
}

// TestConflictReleasesEveryInputOfTheLoser: the loser spends outputs of two
// parents with its inputs interleaved (A, B, A); a block takes B's output.
// Every output the loser held must be released, whatever its input index.
func TestConflictReleasesEveryInputOfTheLoser(t *testing.T) {
	db := newStore(t, Options{})
	a := spendTx("A", []wire.OutPoint{{Hash: chainhash.Hash{0xa1}}}, 2, 5e8)
	b := spendTx("B", []wire.OutPoint{{Hash: chainhash.Hash{0xb1}}}, 1, 5e8)
	mustCreate(t, db, a, 0, mined(0))
	mustCreate(t, db, b, 0, mined(0))
	genesis := Block{Hash: chainhash.DoubleHashH([]byte("g")), Height: 0, Txs: []*chain.Tx{coinbaseTx("g", 1, 50e8)}}
	connectAll(t, db, []Block{genesis})

	loser := spendTx("loser", []wire.OutPoint{out(a, 0), out(b, 0), out(a, 1)}, 1, 1e8)
	mustCreate(t, db, loser, 0)
	if _, err := db.Spend(ctx, loser); err != nil {
		t.Fatal(err)
	}
	winner := spendTx("winner", []wire.OutPoint{out(b, 0)}, 1, 4e8)
	block := Block{Hash: chainhash.DoubleHashH([]byte("1")), PrevHash: genesis.Hash, Height: 1, Txs: []*chain.Tx{coinbaseTx("c1", 1, 50e8), winner}}
	if err := db.ConnectBlock(ctx, block); err != nil {
		t.Fatal(err)
	}
	if !mustGet(t, db, loser.ID).Conflicting {
		t.Fatal("the loser is not conflicting")
	}
	for vout, o := range mustGet(t, db, a.ID).Outputs {
		if o.SpendingData != nil {
			t.Fatalf("output %d of A is still held by %s:%d", vout, o.SpendingData.TxID, o.SpendingData.Vin)
		}
	}
	if sd := mustGet(t, db, b.ID).Outputs[0].SpendingData; sd == nil || sd.TxID != winner.ID {
		t.Fatalf("B's output is spent by %v, want the block's transaction", sd)
	}
}

// TestABlockMiningAConflictingTransactionMakesItTheWinner: the store holds
// T as conflicting (it lost the race for P:0 to A, as a validator stores
// the loser); a block mines T. A becomes the loser, and T, mined on the
// longest chain, stops being conflicting: its outputs are spent by the
// next block and not scheduled for deletion.
func TestABlockMiningAConflictingTransactionMakesItTheWinner(t *testing.T) {
	db := newStore(t, Options{})
	p, genesis := minedParentAtGenesis(t, db, 1)
	a := spendTx("A", []wire.OutPoint{out(p, 0)}, 1, 4e8)
	mustCreate(t, db, a, 0)
	if _, err := db.Spend(ctx, a); err != nil {
		t.Fatal(err)
	}
	tx := spendTx("T", []wire.OutPoint{out(p, 0)}, 1, 4e8)
	mustCreate(t, db, tx, 0, WithConflicting())

	b1 := Block{Hash: chainhash.DoubleHashH([]byte("1")), PrevHash: genesis.Hash, Height: 1, Txs: []*chain.Tx{coinbaseTx("c1", 1, 50e8), tx}}
	if err := db.ConnectBlock(ctx, b1); err != nil {
		t.Fatal(err)
	}
	if !mustGet(t, db, a.ID).Conflicting {
		t.Fatal("A, which the block's T beat, is not conflicting")
	}
	if m := mustGet(t, db, tx.ID); m.Conflicting || m.DeleteAtHeight != 0 {
		t.Fatalf("T, mined on the longest chain: conflicting %v, delete at height %d; want neither", m.Conflicting, m.DeleteAtHeight)
	}
	child := spendTx("child", []wire.OutPoint{out(tx, 0)}, 1, 3e8)
	b2 := Block{Hash: chainhash.DoubleHashH([]byte("2")), PrevHash: b1.Hash, Height: 2, Txs: []*chain.Tx{coinbaseTx("c2", 1, 50e8), child}}
	if err := db.ConnectBlock(ctx, b2); err != nil {
		t.Fatalf("a block spending the mined T: %v", err)
	}
}

// TestABlockMiningAConflictingTransactionAndItsDescendants: the store
// holds T as conflicting (it lost the race for P:0 to A) and T's child C
// too, as a validator stores a loser's descendants; one block mines T, C
// and G, C's child. T and C win before their outputs are spent: the block
// connects, A loses, and none of the block's transactions is conflicting.
// The block used to be refused (C's input: CONFLICTING), every time it was
// sent, stopping the node at the block before.
func TestABlockMiningAConflictingTransactionAndItsDescendants(t *testing.T) {
	testABlockMiningAConflictingTransactionAndItsDescendants(t, onMemory)
}

func testABlockMiningAConflictingTransactionAndItsDescendants(t *testing.T, open engineOpener) {
	db := newStoreOn(t, open, Options{})
	p, genesis, a, lost := raceLostToA(t, db)
	g := spendTx("G", []wire.OutPoint{out(lost[1], 0)}, 1, 2e8)
	b1 := Block{Hash: chainhash.DoubleHashH([]byte("1")), PrevHash: genesis.Hash, Height: 1, Txs: []*chain.Tx{coinbaseTx("c1", 1, 50e8), lost[0], lost[1], g}}
	if err := db.ConnectBlock(ctx, b1); err != nil {
		t.Fatalf("a block mining a conflicting transaction with its descendants: %v", err)
	}
	if !mustGet(t, db, a.ID).Conflicting {
		t.Fatal("A, which the block's T beat, is not conflicting")
	}
	for _, tx := range []*chain.Tx{lost[0], lost[1], g} {
		if mustGet(t, db, tx.ID).Conflicting {
			t.Fatalf("%s, mined on the longest chain, is conflicting", tx.ID)
		}
	}
	if dah := mustGet(t, db, g.ID).DeleteAtHeight; dah != 0 {
		t.Fatalf("G, mined and unspent, is to be deleted at height %d", dah)
	}
	for _, s := range [][2]*chain.Tx{{p, lost[0]}, {lost[0], lost[1]}, {lost[1], g}} {
		if sd := mustGet(t, db, s[0].ID).Outputs[0].SpendingData; sd == nil || sd.TxID != s[1].ID {
			t.Fatalf("%s:0 is spent by %v, want %s", s[0].ID, sd, s[1].ID)
		}
	}
	mustVerify(t, db)
	if err := db.DisconnectBlock(ctx, b1); err != nil {
		t.Fatalf("disconnecting the block: %v", err)
	}
	if m := mustGet(t, db, a.ID); m.Conflicting {
		t.Fatal("A stays conflicting after the block that beat it was disconnected")
	}
	if sd := mustGet(t, db, p.ID).Outputs[0].SpendingData; sd == nil || sd.TxID != a.ID {
		t.Fatalf("P:0 is spent by %v after the disconnection, want A", sd)
	}
	mustVerify(t, db)
}

// TestARefusedBlockLeavesItsWinnersConflicting: the block's first chunk
// mines T and C, which the store held as conflicting, and its second
// chunk spends an output that does not exist. The block is refused, and
// the store is as it was: T and C conflicting again, A holding P:0.
func TestARefusedBlockLeavesItsWinnersConflicting(t *testing.T) {
	db := newStore(t, Options{})
	p, genesis, a, lost := raceLostToA(t, db)
	before := map[chainhash.Hash]*Meta{}
	for _, tx := range []*chain.Tx{p, a, lost[0], lost[1]} {
		before[tx.ID] = mustGet(t, db, tx.ID)
	}
	set := summary(t, db)
	bad := spendTx("bad", []wire.OutPoint{{Hash: chainhash.Hash{0xbd}}}, 1, 1e8)
	chunks := [][]*chain.Tx{{coinbaseTx("c1", 1, 50e8), lost[0], lost[1]}, {bad}}
	b1 := Block{Hash: chainhash.DoubleHashH([]byte("1")), PrevHash: genesis.Hash, Height: 1, Chunks: func(fn func([]*chain.Tx) error) error {
		for _, c := range chunks {
			if err := fn(c); err != nil {
				return err
			}
		}
		return nil
	}}
	if err := db.ConnectBlock(ctx, b1); !errors.Is(err, model.ErrTxNotFound) {
		t.Fatalf("a block spending an output that does not exist: %v, want TX_NOT_FOUND", err)
	}
	for txid, want := range before {
		got := mustGet(t, db, txid)
		// A parent's conflicting children keep every spender ever
		// marked, A too, which the block marked and its undo restored.
		got.ConflictingChildren, want.ConflictingChildren = nil, nil
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s after the refused block:\n%+v\nwant\n%+v", txid, got, want)
		}
	}
	if got := summary(t, db); got != set {
		t.Fatalf("the set after the refused block: %+v\nwant %+v", got, set)
	}
	mustVerify(t, db)
}

// TestABlockTakesAnOutputSpentByATransactionNeverCreated: G spent P:0 and
// P:1 and was never created (a validator stopped between Spend and
// Create); a block's W spends P:0. The block takes P:0 and leaves G's
// spend of P:1 as it is; it used to be refused (G "cannot be read"), every
// time it was sent. A block that is refused after taking P:0 gives it
// back to G.
func TestABlockTakesAnOutputSpentByATransactionNeverCreated(t *testing.T) {
	for _, refused := range []bool{false, true} {
		t.Run(fmt.Sprint("refused=", refused), func(t *testing.T) {
			db := newStore(t, Options{})
			p, genesis := minedParentAtGenesis(t, db, 2)
			ghost := spendTx("G", []wire.OutPoint{out(p, 0), out(p, 1)}, 1, 9e8)
			if _, err := db.Spend(ctx, ghost); err != nil {
				t.Fatal(err)
			}
			w := spendTx("W", []wire.OutPoint{out(p, 0)}, 1, 4e8)
			chunks := [][]*chain.Tx{{coinbaseTx("c1", 1, 50e8), w}}
			if refused {
				chunks = append(chunks, []*chain.Tx{spendTx("bad", []wire.OutPoint{{Hash: chainhash.Hash{0xbd}}}, 1, 1e8)})
			}
			b1 := Block{Hash: chainhash.DoubleHashH([]byte("1")), PrevHash: genesis.Hash, Height: 1, Chunks: func(fn func([]*chain.Tx) error) error {
				for _, c := range chunks {
					if err := fn(c); err != nil {
						return err
					}
				}
				return nil
			}}
			err := db.ConnectBlock(ctx, b1)
			switch {
			case refused && !errors.Is(err, model.ErrTxNotFound):
				t.Fatalf("a block spending an output that does not exist: %v, want TX_NOT_FOUND", err)
			case !refused && err != nil:
				t.Fatalf("a block taking an output a transaction never created spent: %v", err)
			}
			outs := mustGet(t, db, p.ID).Outputs
			want := [2]chainhash.Hash{w.ID, ghost.ID}
			if refused {
				want[0] = ghost.ID
			}
			for vout, o := range outs {
				if o.SpendingData == nil || o.SpendingData.TxID != want[vout] {
					t.Fatalf("P:%d is spent by %v, want %s", vout, o.SpendingData, want[vout])
				}
			}
			mustVerify(t, db)
		})
	}
}

// TestVerifyNamesOutputsSpentByTransactionsNeverCreated: block 1 mines Q;
// G spends Q:0 and is never created; H spends Q:1 and is created. Verify
// names Q:0 and G, and nothing else; once G's spend is undone it passes.
func TestVerifyNamesOutputsSpentByTransactionsNeverCreated(t *testing.T) {
	db := newStore(t, Options{})
	p, genesis := minedParentAtGenesis(t, db, 1)
	q := spendTx("Q", []wire.OutPoint{out(p, 0)}, 2, 2e8)
	connectAll(t, db, []Block{{Hash: chainhash.DoubleHashH([]byte("1")), PrevHash: genesis.Hash, Height: 1, Txs: []*chain.Tx{coinbaseTx("c1", 1, 50e8), q}}})
	ghost := spendTx("G", []wire.OutPoint{out(q, 0)}, 1, 4e8)
	spends, err := db.Spend(ctx, ghost)
	if err != nil {
		t.Fatal(err)
	}
	h := spendTx("H", []wire.OutPoint{out(q, 1)}, 1, 4e8)
	mustCreate(t, db, h, 1)
	if _, err := db.Spend(ctx, h); err != nil {
		t.Fatal(err)
	}
	_, err = db.Verify(ctx)
	var dangling *DanglingSpendsError
	want := []DanglingSpend{{Output: out(q, 0), Spender: model.SpendingData{TxID: ghost.ID, Vin: 0}}}
	if !errors.As(err, &dangling) || !reflect.DeepEqual(dangling.Spends, want) {
		t.Fatalf("verify: %v, want %+v named", err, want)
	}
	if err := db.Unspend(ctx, spends, false); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, db)
}

// TestABlockBeatsALoserWhoseSpenderWasNeverCreated: the mempool's L
// spends P:0, and M spends L:0 and is never created (a validator stopped
// between Spend and Create). Block 1's W spends P:0: L and its
// descendants lose. The block connects, with L conflicting and W holding
// P:0; it used to be refused, every time it was sent, as marking M
// conflicting found no M. Disconnected, it gives P:0 back to L.
func TestABlockBeatsALoserWhoseSpenderWasNeverCreated(t *testing.T) {
	db := newStore(t, Options{})
	p, genesis := minedParentAtGenesis(t, db, 1)
	l := spendTx("L", []wire.OutPoint{out(p, 0)}, 1, 4e8)
	mustCreate(t, db, l, 1)
	if _, err := db.Spend(ctx, l); err != nil {
		t.Fatal(err)
	}
	m := spendTx("M", []wire.OutPoint{out(l, 0)}, 1, 3e8)
	if _, err := db.Spend(ctx, m); err != nil {
		t.Fatal(err)
	}
	w := spendTx("W", []wire.OutPoint{out(p, 0)}, 1, 4e8)
	b1 := blockAfter(genesis, w)
	if err := db.ConnectBlock(ctx, b1); err != nil {
		t.Fatalf("a block beating L, whose output M spent and was never created: %v", err)
	}
	if !mustGet(t, db, l.ID).Conflicting {
		t.Errorf("L, which lost P:0 to the block, is not conflicting")
	}
	if sd := mustGet(t, db, p.ID).Outputs[0].SpendingData; sd == nil || sd.TxID != w.ID {
		t.Errorf("P:0 is spent by %v, want W", sd)
	}
	mustVerify(t, db)
	if err := db.DisconnectBlock(ctx, b1); err != nil {
		t.Fatal(err)
	}
	if sd := mustGet(t, db, p.ID).Outputs[0].SpendingData; sd == nil || sd.TxID != l.ID {
		t.Errorf("P:0 after the block's disconnection is spent by %v, want L", sd)
	}
	mustVerify(t, db)
}

// TestASpendByAPrunedChainTransactionStands: block 1 mines C, which
// spends P:0, and block 2 spends C's output, so C is pruned a few blocks
// on; P remembers it among its deleted children. A block spending P:0
// again double spends the chain and is refused, and Unspend of P:0 too:
// C's spend stands. Taken for a transaction never created, the block
// would have taken P:0.
//
// It runs on an engine that purges by itself as early as the engine
// contract allows, too (purgingAtOnce): the store tells it a height only
// once Prune has recorded what is due at it among its parents' deleted
// children.
func TestASpendByAPrunedChainTransactionStands(t *testing.T) {
	for name, open := range map[string]engineOpener{"memory": onMemory, "purging at once": onPurgingAtOnce} {
		t.Run(name, func(t *testing.T) { testASpendByAPrunedChainTransactionStands(t, open) })
	}
}

func testASpendByAPrunedChainTransactionStands(t *testing.T, open engineOpener) {
	db := newStoreOn(t, open, Options{BlockHeightRetention: 2})
	p, genesis := minedParentAtGenesis(t, db, 2)
	c := spendTx("C", []wire.OutPoint{out(p, 0)}, 1, 4e8)
	d := spendTx("D", []wire.OutPoint{out(c, 0)}, 1, 3e8)
	prev := genesis
	for _, txs := range [][]*chain.Tx{{c}, {d}} {
		prev = blockAfter(prev, txs...)
		connectAll(t, db, []Block{prev})
	}
	prev = connectUntilPruned(t, db, prev, c.ID, 9)
	before := summary(t, db)
	x := spendTx("X", []wire.OutPoint{out(p, 0)}, 1, 4e8)
	if err := db.ConnectBlock(ctx, blockAfter(prev, x)); !errors.Is(err, model.ErrSpent) || !strings.Contains(err.Error(), "since pruned") {
		t.Fatalf("a block spending P:0 again: %v, want SPENT, by C since pruned", err)
	}
	if err := db.Unspend(ctx, []*Spend{{TxID: p.ID, Vout: 0}}, false); !errors.Is(err, model.ErrSpent) || !strings.Contains(err.Error(), "since pruned") {
		t.Fatalf("Unspend of P:0: %v, want SPENT, by C since pruned", err)
	}
	if sd := mustGet(t, db, p.ID).Outputs[0].SpendingData; sd == nil || sd.TxID != c.ID {
		t.Fatalf("P:0 is spent by %v, want C", sd)
	}
	if got := summary(t, db); got != before {
		t.Fatalf("the refusals changed the set:\n%+v\nwant\n%+v", got, before)
	}
	mustVerify(t, db)
}

// TestDisconnectingABlockWhoseLoserWasDeletedCompletes: the block beats L
// for P:0; L, conflicting, is deleted at its delete-at-height a few blocks
// on. Disconnecting back below the block completes, with W, unmined, holding
// P:0; it used to fail on L, TX_NOT_FOUND, every time, so the store could
// not be reorganised.
func TestDisconnectingABlockWhoseLoserWasDeletedCompletes(t *testing.T) {
	db := newStore(t, Options{BlockHeightRetention: 2})
	p, genesis := minedParentAtGenesis(t, db, 1)
	loser := spendTx("L", []wire.OutPoint{out(p, 0)}, 1, 4e8)
	mustCreate(t, db, loser, 1)
	if _, err := db.Spend(ctx, loser); err != nil {
		t.Fatal(err)
	}
	w := spendTx("W", []wire.OutPoint{out(p, 0)}, 1, 4e8)
	blocks := []Block{genesis}
	for len(blocks) < 8 {
		b := blockAfter(blocks[len(blocks)-1])
		if b.Height == 1 {
			b.Txs = append(b.Txs, w)
		}
		connectAll(t, db, []Block{b})
		blocks = append(blocks, b)
	}
	if _, err := db.Get(ctx, loser.ID); !errors.Is(err, model.ErrTxNotFound) {
		t.Fatalf("L after %d blocks: %v, want it deleted", len(blocks), err)
	}
	for h := len(blocks) - 1; h >= 1; h-- {
		if err := db.DisconnectBlock(ctx, blocks[h]); err != nil {
			t.Fatalf("disconnecting block %d: %v", h, err)
		}
	}
	if sd := mustGet(t, db, p.ID).Outputs[0].SpendingData; sd == nil || sd.TxID != w.ID {
		t.Fatalf("P:0 is spent by %v, want W", sd)
	}
	mustVerify(t, db)
}

// TestAnOldUnminedTransactionNamingNoOutputIsCleanedUp: U, created
// unmined without a Spend, names an output P does not have (Create checks
// no input). When U is old enough to be cleaned up, releasing that input
// is refused (UTXO_NOT_FOUND); the blocks still connect and U goes. Every
// block used to fail there, from then on.
func TestAnOldUnminedTransactionNamingNoOutputIsCleanedUp(t *testing.T) {
	db := newStore(t, Options{BlockHeightRetention: 2})
	p, genesis := minedParentAtGenesis(t, db, 1)
	u := spendTx("U", []wire.OutPoint{out(p, 7)}, 1, 4e8)
	mustCreate(t, db, u, 1)
	prev := genesis
	for h := uint32(1); h <= 4; h++ {
		b := blockAfter(prev)
		if err := db.ConnectBlock(ctx, b); err != nil {
			t.Fatalf("block %d: %v", h, err)
		}
		prev = b
	}
	if _, err := db.Get(ctx, u.ID); !errors.Is(err, model.ErrTxNotFound) {
		t.Fatalf("U after 4 blocks: %v, want it cleaned up", err)
	}
	mustVerify(t, db)
}

// TestUnspendLeavesTheChainsSpends: the block mines W, which spends P:0,
// and U, unmined, spends P:1. Unspend of W's spend, named with its
// spending data or without, is refused with SPENT naming W, and so is
// one that also names U's, which is not undone either. Once the block is
// disconnected, W's spend can be undone.
func TestUnspendLeavesTheChainsSpends(t *testing.T) {
	db := newStore(t, Options{})
	p, genesis := minedParentAtGenesis(t, db, 2)
	w := spendTx("W", []wire.OutPoint{out(p, 0)}, 1, 4e8)
	b1 := Block{Hash: chainhash.DoubleHashH([]byte("1")), PrevHash: genesis.Hash, Height: 1, Txs: []*chain.Tx{coinbaseTx("c1", 1, 50e8), w}}
	connectAll(t, db, []Block{b1})
	u := spendTx("U", []wire.OutPoint{out(p, 1)}, 1, 4e8)
	mustCreate(t, db, u, 1)
	if _, err := db.Spend(ctx, u); err != nil {
		t.Fatal(err)
	}
	spendsOfTx := func(tx *chain.Tx) []*Spend {
		s, err := spendsOf(tx, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for name, spends := range map[string][]*Spend{
		"with its spending data": spendsOfTx(w),
		"without":                {{TxID: p.ID, Vout: 0}},
		"beside U's":             append(spendsOfTx(u), spendsOfTx(w)...),
	} {
		err := db.Unspend(ctx, spends, false)
		if !errors.Is(err, model.ErrSpent) {
			t.Fatalf("unspend of the chain's spend %s: %v, want SPENT", name, err)
		}
		chainSpend := spends[len(spends)-1]
		if chainSpend.ConflictingTxID == nil || *chainSpend.ConflictingTxID != w.ID || !errors.Is(chainSpend.Err, model.ErrSpent) {
			t.Fatalf("unspend of the chain's spend %s: the spend says %v (spent by %v), want SPENT by W", name, chainSpend.Err, chainSpend.ConflictingTxID)
		}
		for vout, holder := range []*chain.Tx{w, u} {
			if sd := mustGet(t, db, p.ID).Outputs[vout].SpendingData; sd == nil || sd.TxID != holder.ID {
				t.Fatalf("after the refused unspend %s, P:%d is spent by %v, want %s", name, vout, sd, holder.ID)
			}
		}
	}
	if err := db.DisconnectBlock(ctx, b1); err != nil {
		t.Fatal(err)
	}
	if err := db.Unspend(ctx, spendsOfTx(w), false); err != nil {
		t.Fatalf("unspend of W's spend once its block is disconnected: %v", err)
	}
	if sd := mustGet(t, db, p.ID).Outputs[0].SpendingData; sd != nil {
		t.Fatalf("P:0 is spent by %v after W's spend was undone", sd)
	}
}

// raceLostToA stores P, mined at genesis, then A, which spends P:0, and
// T, which lost the race for P:0 to A, with its child C, both stored as
// conflicting (lost holds T and C).
func raceLostToA(t *testing.T, db *DB) (p *chain.Tx, genesis Block, a *chain.Tx, lost [2]*chain.Tx) {
	t.Helper()
	p, genesis = minedParentAtGenesis(t, db, 1)
	a = spendTx("A", []wire.OutPoint{out(p, 0)}, 1, 4e8)
	mustCreate(t, db, a, 0)
	if _, err := db.Spend(ctx, a); err != nil {
		t.Fatal(err)
	}
	lost[0] = spendTx("T", []wire.OutPoint{out(p, 0)}, 1, 4e8)
	lost[1] = spendTx("C", []wire.OutPoint{out(lost[0], 0)}, 1, 3e8)
	for _, tx := range lost {
		mustCreate(t, db, tx, 0, WithConflicting())
	}
	return p, genesis, a, lost
}

// TestDisconnectingABlockWhoseLoserLostAnInputSinceCompletes: the block
// beats L for P:0, which releases L's other input P:1 too; M then spends
// P:1. Disconnecting the block cannot give P:1 back to L: L stays
// conflicting (it loses to M now), and the disconnection completes, where
// it used to fail half done, with the block's own spend undone and the tip
// left on it, every retry failing the same way. W, unmined now, spends
// P:0 again, which no loser took back.
func TestDisconnectingABlockWhoseLoserLostAnInputSinceCompletes(t *testing.T) {
	db := newStore(t, Options{})
	p, genesis := minedParentAtGenesis(t, db, 2)
	loser := spendTx("L", []wire.OutPoint{out(p, 0), out(p, 1)}, 1, 9e8)
	lchild := spendTx("L's child", []wire.OutPoint{out(loser, 0)}, 1, 8e8)
	for _, tx := range []*chain.Tx{loser, lchild} {
		mustCreate(t, db, tx, 0)
		if _, err := db.Spend(ctx, tx); err != nil {
			t.Fatal(err)
		}
	}
	w := spendTx("W", []wire.OutPoint{out(p, 0)}, 1, 4e8)
	b1 := Block{Hash: chainhash.DoubleHashH([]byte("1")), PrevHash: genesis.Hash, Height: 1, Txs: []*chain.Tx{coinbaseTx("c1", 1, 50e8), w}}
	if err := db.ConnectBlock(ctx, b1); err != nil {
		t.Fatal(err)
	}
	m := spendTx("M", []wire.OutPoint{out(p, 1)}, 1, 4e8)
	mustCreate(t, db, m, 1)
	if _, err := db.Spend(ctx, m); err != nil {
		t.Fatalf("M spending P:1, which the block released from L: %v", err)
	}
	if err := db.DisconnectBlock(ctx, b1); err != nil {
		t.Fatalf("disconnecting the block: %v", err)
	}
	if tip, _, err := db.Tip(ctx); err != nil || tip.Height != 0 {
		t.Fatalf("the tip after the disconnection: %+v (%v), want height 0", tip, err)
	}
	for _, tx := range []*chain.Tx{loser, lchild} {
		if !mustGet(t, db, tx.ID).Conflicting {
			t.Fatalf("%s is not conflicting, though M holds P:1", tx.ID)
		}
	}
	outs := mustGet(t, db, p.ID).Outputs
	if sd := outs[0].SpendingData; sd == nil || sd.TxID != w.ID {
		t.Fatalf("P:0 is spent by %v after its block was disconnected and its loser stays conflicting, want W", sd)
	}
	if w := mustGet(t, db, w.ID); w.Conflicting || w.UnminedSince == 0 {
		t.Fatalf("W after its block was disconnected: conflicting %v, unmined since %d; want unmined, not conflicting", w.Conflicting, w.UnminedSince)
	}
	if sd := outs[1].SpendingData; sd == nil || sd.TxID != m.ID {
		t.Fatalf("P:1 is spent by %v, want M", sd)
	}
}

// TestADisconnectedBlocksTransactionsHoldTheirInputs: a disconnected
// block's transaction returns to unmined holding its inputs, as an unmined
// transaction does, so another spend of one is refused. Where the block
// made a loser, the loser takes its inputs back and the block's
// transaction, which lost to it now, is conflicting: the unmined
// transactions listed never spend one output twice. The block's
// transactions used to hold nothing, both were listed, and any
// transaction could spend their inputs again.
func TestADisconnectedBlocksTransactionsHoldTheirInputs(t *testing.T) {
	for _, withLoser := range []bool{false, true} {
		t.Run(fmt.Sprint("loser=", withLoser), func(t *testing.T) {
			db := newStore(t, Options{})
			p, genesis := minedParentAtGenesis(t, db, 1)
			loser := spendTx("L", []wire.OutPoint{out(p, 0)}, 1, 4e8)
			if withLoser {
				mustCreate(t, db, loser, 1)
				if _, err := db.Spend(ctx, loser); err != nil {
					t.Fatal(err)
				}
			}
			w := spendTx("W", []wire.OutPoint{out(p, 0)}, 1, 4e8)
			b1 := Block{Hash: chainhash.DoubleHashH([]byte("1")), PrevHash: genesis.Hash, Height: 1, Txs: []*chain.Tx{coinbaseTx("c1", 1, 50e8), w}}
			connectAll(t, db, []Block{b1})
			if err := db.DisconnectBlock(ctx, b1); err != nil {
				t.Fatal(err)
			}
			holder, lost := w, false
			if withLoser {
				holder, lost = loser, true
			}
			if sd := mustGet(t, db, p.ID).Outputs[0].SpendingData; sd == nil || sd.TxID != holder.ID {
				t.Fatalf("P:0 after the disconnection is spent by %v, want %s", sd, holder.ID)
			}
			if m := mustGet(t, db, w.ID); m.Conflicting != lost || m.UnminedSince == 0 {
				t.Fatalf("W after the disconnection: conflicting %v, unmined since %d; want conflicting %v, unmined", m.Conflicting, m.UnminedSince, lost)
			}
			z := spendTx("Z", []wire.OutPoint{out(p, 0)}, 1, 3e8)
			if spends, err := db.Spend(ctx, z); !errors.Is(err, model.ErrSpent) || *spends[0].ConflictingTxID != holder.ID {
				t.Fatalf("another spend of P:0: %v, want SPENT by %s", err, holder.ID)
			}
			mempool, err := Mempool(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			if len(mempool) != 1 || mempool[0].TxID != holder.ID {
				t.Fatalf("the unmined transactions listed: %+v, want %s alone", mempool, holder.ID)
			}
			mustVerify(t, db)
		})
	}
}

// TestABlockSentAgainAfterACrashStillRestoresItsLoser: the block beats L
// for P:0. Its metadata writes are stopped after each in turn, as a crash
// would stop them, the store is reopened and the block sent again, as
// ConnectBlock asks. The second attempt finds the block's spend in place
// and L marked, so it sees no double spend; disconnecting the block must
// still restore L, which takes P:0 back. It used to stay conflicting (and
// be deleted at its delete-at-height) with P:0 spent by no one.
func TestABlockSentAgainAfterACrashStillRestoresItsLoser(t *testing.T) {
	for cut := 0; ; cut++ {
		eng := memory.New()
		cutter := &cutMeta{Engine: eng, left: -1}
		db, err := Open(ctx, cutter, Options{})
		if err != nil {
			t.Fatal(err)
		}
		p, genesis := minedParentAtGenesis(t, db, 1)
		loser := spendTx("L", []wire.OutPoint{out(p, 0)}, 1, 4e8)
		mustCreate(t, db, loser, 0)
		if _, err := db.Spend(ctx, loser); err != nil {
			t.Fatal(err)
		}
		w := spendTx("W", []wire.OutPoint{out(p, 0)}, 1, 4e8)
		b1 := Block{Hash: chainhash.DoubleHashH([]byte("1")), PrevHash: genesis.Hash, Height: 1, Txs: []*chain.Tx{coinbaseTx("c1", 1, 50e8), w}}

		cutter.left = cut
		err = db.ConnectBlock(ctx, b1)
		if err != nil && !errors.Is(err, errCut) {
			t.Fatalf("cut after %d metadata writes: %v", cut, err)
		}
		complete := err == nil
		reopened, err := Open(ctx, eng, Options{})
		if err != nil {
			t.Fatalf("cut after %d metadata writes: reopening: %v", cut, err)
		}
		if tip, _, err := reopened.Tip(ctx); err != nil || tip.Height != 1 {
			if err := reopened.ConnectBlock(ctx, b1); err != nil {
				t.Fatalf("cut after %d metadata writes: the block sent again: %v", cut, err)
			}
		}
		if !mustGet(t, reopened, loser.ID).Conflicting {
			t.Fatalf("cut after %d metadata writes: L is not conflicting once the block is connected", cut)
		}
		if err := reopened.DisconnectBlock(ctx, b1); err != nil {
			t.Fatalf("cut after %d metadata writes: disconnecting the block: %v", cut, err)
		}
		if mustGet(t, reopened, loser.ID).Conflicting {
			t.Fatalf("cut after %d metadata writes: L stays conflicting after the block that beat it was disconnected", cut)
		}
		if sd := mustGet(t, reopened, p.ID).Outputs[0].SpendingData; sd == nil || sd.TxID != loser.ID {
			t.Fatalf("cut after %d metadata writes: P:0 is spent by %v after the disconnection, want L", cut, sd)
		}
		if complete {
			if cut < 2 {
				t.Fatalf("the block connected after %d metadata writes: the test stops it nowhere", cut)
			}
			return
		}
	}
}

// A block whose transactions were submitted first finds their spends in
// place: it checks them on the stored bytes and leaves the parents exactly
// as they were. A parent damaged in between is still reported as such
// (MALFORMED), the block refused and the tip left where it was.
func TestBlockOfSubmittedTransactionsRechecksTheirSpends(t *testing.T) {
	for _, damaged := range []bool{false, true} {
		t.Run(fmt.Sprint("damaged=", damaged), func(t *testing.T) {
			db := newStore(t, Options{})
			genesis := Block{Hash: chainhash.DoubleHashH([]byte("g0")), Height: 0, Txs: []*chain.Tx{coinbaseTx("g0", 1, 50e8)}}
			connectAll(t, db, []Block{genesis})
			parent := spendTx("parent", []wire.OutPoint{{Hash: chainhash.DoubleHashH([]byte("outside")), Index: 0}}, 3, 1e8)
			mustCreate(t, db, parent, 0, mined(0))
			child := spendTx("child", []wire.OutPoint{out(parent, 0), out(parent, 2)}, 1, 1e8)
			if _, err := db.Spend(ctx, child); err != nil {
				t.Fatal(err)
			}
			mustCreate(t, db, child, db.GetBlockHeight())
			key := engine.Key(record.MasterKey(parent.ID))
			stored, err := db.eng.Get(ctx, []engine.Key{key})
			if err != nil {
				t.Fatal(err)
			}
			before := stored[0]
			if damaged {
				// A trailing byte: the record no longer decodes.
				bad := append(bytes.Clone(before), 0)
				if _, err := db.eng.Update(ctx, []engine.Update{{Key: key, Fn: func([]byte) (engine.Mutation, error) {
					return engine.Mutation{Action: engine.Put, Value: bad}, nil
				}}}); err != nil {
					t.Fatal(err)
				}
				before = bad
			}
			block := Block{Hash: chainhash.DoubleHashH([]byte("g1")), PrevHash: genesis.Hash, Height: 1, Txs: []*chain.Tx{coinbaseTx("g1", 1, 50e8), child}}
			err = db.ConnectBlock(ctx, block)
			after, getErr := db.eng.Get(ctx, []engine.Key{key})
			if getErr != nil {
				t.Fatal(getErr)
			}
			if !bytes.Equal(after[0], before) {
				t.Fatal("connecting the block rewrote the parent record")
			}
			if damaged {
				wantCode(t, err, model.ErrMalformed)
				if h := db.GetBlockHeight(); h != 0 {
					t.Fatalf("height %d after a refused block, want 0", h)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, vout := range []int{0, 2} {
				if sd := mustGet(t, db, parent.ID).Outputs[vout].SpendingData; sd == nil || sd.TxID != child.ID {
					t.Fatalf("output %d spent by %v, want the child", vout, sd)
				}
			}
		})
	}
}

// minedParentAtGenesis stores P, a transaction of n outputs mined below
// the chain (at height 0), and connects the chain's first block, which it
// returns with P.
func minedParentAtGenesis(t *testing.T, db *DB, n int) (*chain.Tx, Block) {
	t.Helper()
	p := spendTx("P", []wire.OutPoint{{Hash: chainhash.Hash{0xa1}}}, n, 5e8)
	mustCreate(t, db, p, 0, mined(0))
	genesis := Block{Hash: chainhash.DoubleHashH([]byte("g")), Height: 0, Txs: []*chain.Tx{coinbaseTx("g", 1, 50e8)}}
	connectAll(t, db, []Block{genesis})
	return p, genesis
}

// connectUntilPruned connects empty blocks after prev until txid is no
// longer stored, and returns the tip; it fails if txid is still stored
// once the tip reaches height limit.
func connectUntilPruned(t *testing.T, db *DB, prev Block, txid chainhash.Hash, limit uint32) Block {
	t.Helper()
	for {
		_, err := db.Get(ctx, txid)
		switch {
		case errors.Is(err, model.ErrTxNotFound):
			return prev
		case err != nil:
			t.Fatal(err)
		case prev.Height >= limit:
			t.Fatalf("%s is still stored at height %d, want it pruned", txid, prev.Height)
		}
		prev = blockAfter(prev)
		connectAll(t, db, []Block{prev})
	}
}

// blockAfter is the test block above prev: "block H" at height H, its own
// coinbase, then txs.
func blockAfter(prev Block, txs ...*chain.Tx) Block {
	h := prev.Height + 1
	return Block{Hash: chainhash.DoubleHashH(fmt.Append(nil, "block ", h)), PrevHash: prev.Hash, Height: h,
		Txs: append([]*chain.Tx{coinbaseTx(fmt.Sprint("c", h), 1, 50e8)}, txs...)}
}

// TestAnUnminedSpenderKeepsItsParent: the mempool's C spends all of P,
// which a block mined, so P is scheduled for deletion a retention on. The
// store is asked to keep unmined transactions longer than that (retentions
// 2 and 10, as a node's mempool expiry of two weeks is against 288
// blocks). P used to be deleted while C waited, and the block that mined
// C was refused for good (its input's transaction not found). The block
// height retention now covers the unmined one and half of itself: P stays
// while C may still be mined, and goes after.
func TestAnUnminedSpenderKeepsItsParent(t *testing.T) {
	for name, open := range map[string]engineOpener{"memory": onMemory, "purging at once": onPurgingAtOnce} {
		t.Run(name, func(t *testing.T) {
			db := newStoreOn(t, open, Options{BlockHeightRetention: 2, UnminedRetention: 10})
			p, genesis := minedParentAtGenesis(t, db, 1)
			c := spendTx("C", []wire.OutPoint{out(p, 0)}, 1, 4e8)
			if _, err := db.Spend(ctx, c); err != nil {
				t.Fatal(err)
			}
			mustCreate(t, db, c, 0)
			blocks := []Block{genesis}
			connect := func(txs ...*chain.Tx) {
				t.Helper()
				b := blockAfter(blocks[len(blocks)-1], txs...)
				if err := db.ConnectBlock(ctx, b); err != nil {
					t.Fatalf("block %d: %v", b.Height, err)
				}
				blocks = append(blocks, b)
			}
			for len(blocks) < 8 {
				connect()
			}
			mustGet(t, db, p.ID)
			connect(c)
			connectUntilPruned(t, db, blocks[len(blocks)-1], p.ID, 15)
			mustVerify(t, db)
		})
	}
}

// TestDeletingAChainTransactionKeepsItsSpends: a client deletes C, which
// block 1 mined spending P:0. A block spending P:0 again double spends the
// chain and is refused, as for C pruned: C's spend stands. It used to be
// taken for a spend of a transaction never created, and the block
// connected.
func TestDeletingAChainTransactionKeepsItsSpends(t *testing.T) {
	db := newStore(t, Options{})
	p, genesis := minedParentAtGenesis(t, db, 2)
	c := spendTx("C", []wire.OutPoint{out(p, 0)}, 1, 4e8)
	b1 := blockAfter(genesis, c)
	connectAll(t, db, []Block{b1})
	if err := db.Delete(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	x := spendTx("X", []wire.OutPoint{out(p, 0)}, 1, 4e8)
	if err := db.ConnectBlock(ctx, blockAfter(b1, x)); !errors.Is(err, model.ErrSpent) {
		t.Fatalf("a block spending P:0 again after C's deletion: %v, want SPENT", err)
	}
	if sd := mustGet(t, db, p.ID).Outputs[0].SpendingData; sd == nil || sd.TxID != c.ID {
		t.Fatalf("P:0 is spent by %v, want C", sd)
	}
	// An unmined transaction's spends are no chain's: a block takes them.
	u := spendTx("U", []wire.OutPoint{out(p, 1)}, 1, 4e8)
	if _, err := db.Spend(ctx, u); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, db, u, 1)
	if err := db.Delete(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	w := spendTx("W", []wire.OutPoint{out(p, 1)}, 1, 4e8)
	if err := db.ConnectBlock(ctx, blockAfter(b1, w)); err != nil {
		t.Fatalf("a block spending P:1, which a deleted unmined transaction held: %v", err)
	}
}
