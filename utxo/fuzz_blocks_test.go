package utxo

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/blob"
	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/sozu"
	"github.com/utxostore/utxostore/utxo/model"
)

// chainModel is the chain a sequence of blocks makes: its blocks, and who
// among their transactions spent what. Only the blocks decide it; what
// the store holds unmined (spends, conflicting transactions) must not.
type chainModel struct {
	blocks  []Block
	mined   map[chainhash.Hash]int // a chain transaction's outputs
	spender map[wire.OutPoint]model.SpendingData
}

// connect adds b, whose spends extendsChain has checked.
func (c *chainModel) connect(b Block) {
	c.blocks = append(c.blocks, b)
	for _, tx := range b.Txs {
		c.mined[tx.ID] = len(tx.Msg.TxOut)
		if tx.IsCoinbase() {
			continue
		}
		for vin, in := range tx.Msg.TxIn {
			c.spender[in.PreviousOutPoint] = model.SpendingData{TxID: tx.ID, Vin: uint32(vin)}
		}
	}
}

// disconnect takes the tip block away.
func (c *chainModel) disconnect() Block {
	b := c.blocks[len(c.blocks)-1]
	c.blocks = c.blocks[:len(c.blocks)-1]
	for _, tx := range b.Txs {
		delete(c.mined, tx.ID)
		if tx.IsCoinbase() {
			continue
		}
		for _, in := range tx.Msg.TxIn {
			delete(c.spender, in.PreviousOutPoint)
		}
	}
	return b
}

// fullySpent reports whether the chain spends every output of tx, which
// the store then prunes.
func (c *chainModel) fullySpent(tx *chain.Tx) bool {
	for vout := range uint32(len(tx.Msg.TxOut)) {
		if _, spent := c.spender[wire.OutPoint{Hash: tx.ID, Index: vout}]; !spent {
			return false
		}
	}
	return true
}

// spendable reports whether op is an output of the chain, or of one of
// pending (transactions before it in its block), that neither spends.
func (c *chainModel) spendable(op wire.OutPoint, pending map[chainhash.Hash]int, taken map[wire.OutPoint]bool) bool {
	n, ok := c.mined[op.Hash]
	if !ok {
		n, ok = pending[op.Hash]
	}
	_, spent := c.spender[op]
	return ok && int(op.Index) < n && !spent && !taken[op]
}

// blockStepSeeds are the block fuzzers' first inputs.
var blockStepSeeds = [][]byte{
	// A and T spend root:0, C spends T:0; A is submitted, T and C stored
	// conflicting; a block mines T and C.
	{0, 0, 0, 0, 0, 0, 0, 0, 2, 1, 1, 0, 3, 1, 0, 2, 2, 0, 2, 3, 0, 5, 2, 1},
	// L and W spend root:0; L is submitted, and a block mines W, which
	// takes root:0 from L; it is disconnected and connected again, and a
	// block double spending root:0 is refused.
	{0, 0, 0, 0, 0, 0, 1, 1, 0, 3, 1, 0, 5, 2, 0, 6, 0, 0, 5, 2, 0, 5, 1, 1},
	// A block mines tx1, which spends root:0, and is disconnected: tx1,
	// unmined, still holds root:0.
	{0, 0, 0, 5, 1, 0, 6, 0, 0},
	// Block 1 mines tx1; U, a rival of tx1, is stored unmined; tx2 spends
	// tx1:2 and U:0, is stored and marked conflicting, its spends in
	// place; empty blocks follow, and block 4 spends tx1:2.
	{0, 0, 8, 5, 0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 2, 3, 3, 0, 1, 3, 0, 2, 3, 3, 5, 0, 0, 5, 0, 0, 0, 0, 9, 5, 4, 0},
}

// FuzzBlocksKeepTheChainsSpends: any sequence of creates (plain or
// conflicting, as a validator stores a double spend's loser), spends and
// unspends of unmined transactions, blocks and disconnections leaves the
// store agreeing with the chain the blocks make, on the memory engine and
// on Sozu:
//   - a block whose every input spends an output of the chain (or of a
//     transaction before it in the block) that no chain transaction
//     spends connects, whatever the store holds unmined: an unmined
//     spender of its outputs loses, a conflicting transaction it mines
//     wins;
//   - a block that spends an output the chain spent already, or one that
//     does not exist, is refused and changes nothing;
//   - every output the chain spends is spent by the chain's spender, and
//     the chain's transactions are mined and not conflicting;
//   - an output of the chain that no chain transaction spends is unspent
//     or spent by a transaction off the chain;
//   - disconnecting the tip block always succeeds, and its transactions,
//     unmined now, hold their inputs or are conflicting;
//   - Verify passes, or names outputs spent by transactions never
//     created, truly.
//
// Each three bytes of the input are one step: a new transaction (its
// inputs among the outputs of those before it), its Create, conflicting
// Create or marking (SetConflicting) off the chain, Spend or Unspend, a
// block of some of the transactions, or the tip block's disconnection.
func FuzzBlocksKeepTheChainsSpends(f *testing.F) {
	for _, seed := range blockStepSeeds {
		f.Add(seed)
	}
	engines := map[string]engineOpener{
		"memory": onMemory,
		"sozu": func(t testing.TB) engine.Engine {
			return openTinySozu(t, filepath.Join(t.TempDir(), "sozu"))
		},
	}
	f.Fuzz(func(t *testing.T, steps []byte) {
		if len(steps) > 3*32 {
			steps = steps[:3*32]
		}
		for name, open := range engines {
			// A retention of two blocks: a fully spent chain transaction
			// is pruned two blocks on, within an input. On memory, the
			// unmined retention asked for is the longer, as with a
			// node's mempool expiry, and the store raises the block
			// height retention to cover it (Options).
			opts := Options{UtxoBatchSize: 2, BlockHeightRetention: 2}
			if name == "memory" {
				opts.UnminedRetention = 3
			}
			checkBlockSteps(t, name, newStoreOn(t, open, opts), steps, nil)
		}
	})
}

// FuzzBlocksKeepTheChainsSpendsAcrossReopens runs the steps of
// FuzzBlocksKeepTheChainsSpends on Sozu, closing the store and opening it
// again from its directory after every block connected or disconnected,
// as a node restarts: Close folds the pending set statistics into the
// chain state and checkpoints the engine, and what the reopened store
// reads back (the chain state, the height, the records and the engine's
// indexes of delete-at-heights and unmined transactions, which the next
// blocks' cleanups scan) must pass the same checks.
func FuzzBlocksKeepTheChainsSpendsAcrossReopens(f *testing.F) {
	for _, seed := range blockStepSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, steps []byte) {
		if len(steps) > 3*32 {
			steps = steps[:3*32]
		}
		dir := t.TempDir()
		bs, err := blob.NewFileStore(filepath.Join(dir, "blobs"))
		if err != nil {
			t.Fatal(err)
		}
		opts := Options{UtxoBatchSize: 2, BlockHeightRetention: 2, Blobs: bs}
		var open *DB // closed when the input ends, however it ends
		t.Cleanup(func() {
			if open != nil {
				_ = open.Close()
			}
		})
		reopen := func(db *DB) *DB {
			if db != nil {
				if err := db.Close(); err != nil {
					t.Fatalf("closing the store: %v", err)
				}
			}
			if open, err = Open(ctx, openTinySozu(t, filepath.Join(dir, "sozu")), opts); err != nil {
				t.Fatalf("opening the store again: %v", err)
			}
			return open
		}
		checkBlockSteps(t, "sozu", reopen(nil), steps, reopen)
	})
}

// openTinySozu opens a Sozu engine of a tiny layout at dir: opening it is
// quick, and records move to deeper layers and the value log within a
// fuzzer's input.
func openTinySozu(t testing.TB, dir string) engine.Engine {
	e, err := sozu.Open(dir, sozu.Options{Sync: engine.SyncBlock,
		Shards: 2, Layer0Buckets: 2, FanoutBits: 1, Layers: 5, Capacity: []int{400, 600}, FlowRatio: []float64{0.5, 0.6},
		InlineMax: 150, FilterKeys: 64, CheckpointLogBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// checkBlockSteps runs steps on a new store db. reopen, when not nil,
// closes the store after every block connected or disconnected and
// returns it opened again.
func checkBlockSteps(t *testing.T, engineName string, db *DB, steps []byte, reopen func(*DB) *DB) {
	// The root's outputs are the chain's first: it is mined at height 0.
	root := spendTx("root", []wire.OutPoint{{Hash: chainhash.Hash{1}}}, 4, 1000)
	mustCreate(t, db, root, 0, mined(0))
	c := &chainModel{mined: map[chainhash.Hash]int{root.ID: 4}, spender: map[wire.OutPoint]model.SpendingData{}}
	made := 0 // blocks made, for unique coinbases
	newBlock := func(txs []*chain.Tx) Block {
		made++
		b := Block{Hash: chainhash.DoubleHashH(fmt.Appendf(nil, "block %d", made)), Height: uint32(len(c.blocks)),
			Txs: append([]*chain.Tx{coinbaseTx(fmt.Sprint("coinbase ", made), 1, 50e8)}, txs...)}
		if len(c.blocks) > 0 {
			b.PrevHash = c.blocks[len(c.blocks)-1].Hash
		}
		return b
	}
	genesis := newBlock(nil)
	if err := db.ConnectBlock(ctx, genesis); err != nil {
		t.Fatal(err)
	}
	c.connect(genesis)
	txs := []*chain.Tx{root}
	// returned holds the transactions of disconnected blocks, but those
	// the steps unspent since.
	returned := map[chainhash.Hash]*chain.Tx{}
	for i := 0; i+2 < len(steps); i += 3 {
		kind, a, b := steps[i]%7, int(steps[i+1]), int(steps[i+2])
		tx := txs[a%len(txs)]
		_, onChain := c.mined[tx.ID]
		if (kind == 1 || kind == 2) && onChain && c.fullySpent(tx) {
			// Pruned, or soon: Create checks no input, and a validator's
			// Spend, which comes first, is refused (INVALID_SPEND: its
			// spender was deleted).
			continue
		}
		var step string
		switch kind {
		case 0:
			txs = append(txs, fuzzSpender(txs, a, b, fmt.Sprint("tx", len(txs))))
			continue
		case 1:
			step = "create " + tx.ID.String()
			_, _ = db.Create(ctx, tx, createHeight(db, b))
		case 2:
			if b%4 == 3 && !onChain {
				// A validator's marking, its spends left in place.
				step = "mark conflicting " + tx.ID.String()
				_, _, _ = db.SetConflicting(ctx, []chainhash.Hash{tx.ID}, true)
				break
			}
			step = "create conflicting " + tx.ID.String()
			_, _ = db.Create(ctx, tx, createHeight(db, b), WithConflicting())
		case 3:
			step = "spend " + tx.ID.String()
			_, _ = db.Spend(ctx, tx)
		case 4:
			step = "unspend " + tx.ID.String()
			spends, err := spendsOf(tx, nil)
			if err != nil {
				t.Fatal(err)
			}
			_ = db.Unspend(ctx, spends, false)
			delete(returned, tx.ID)
		case 5:
			blockTxs, valid := pickBlock(c, txs, a, b)
			block := newBlock(blockTxs)
			step = fmt.Sprintf("block %d of %d transactions (valid %v)", block.Height, len(block.Txs), valid)
			before, set := storeView(t, db, txs), summary(t, db)
			err := db.ConnectBlock(ctx, block)
			switch {
			case valid && err != nil:
				t.Fatalf("%s: step %d: %s: %v", engineName, i/3, step, err)
			case valid:
				c.connect(block)
			case err == nil:
				t.Fatalf("%s: step %d: %s connected", engineName, i/3, step)
			default:
				if after := storeView(t, db, txs); !reflect.DeepEqual(after, before) {
					t.Fatalf("%s: step %d: %s was refused (%v) and changed the store:\n%v\nwant\n%v", engineName, i/3, step, err, after, before)
				}
				if got := summary(t, db); got != set {
					t.Fatalf("%s: step %d: %s was refused (%v) and changed the set:\n%+v\nwant\n%+v", engineName, i/3, step, err, got, set)
				}
			}
		case 6:
			if len(c.blocks) == 1 {
				continue
			}
			block := c.disconnect()
			step = fmt.Sprintf("disconnect block %d", block.Height)
			if err := db.DisconnectBlock(ctx, block); err != nil {
				t.Fatalf("%s: step %d: %s: %v", engineName, i/3, step, err)
			}
			for _, tx := range block.Txs[1:] {
				returned[tx.ID] = tx
			}
		}
		if reopen != nil && (kind == 5 || kind == 6) {
			db = reopen(db)
		}
		after := fmt.Sprintf("%s: step %d (%s)", engineName, i/3, step)
		checkChainSpends(t, after, db, c, txs)
		checkReturnedHoldTheirInputs(t, after, db, c, returned)
	}
	_, err := db.Verify(ctx)
	var dangling *DanglingSpendsError
	if errors.As(err, &dangling) {
		// Spends whose transactions were never created: so they are.
		for _, d := range dangling.Spends {
			if _, err := db.Get(ctx, d.Spender.TxID); !errors.Is(err, model.ErrTxNotFound) {
				t.Fatalf("%s: verify names %s as spent by %s, which the store does not hold; reading it: %v", engineName, d.Output, d.Spender.TxID, err)
			}
			resp, err := db.GetSpend(ctx, &Spend{TxID: d.Output.Hash, Vout: d.Output.Index})
			if err != nil || resp.SpendingData == nil || *resp.SpendingData != d.Spender {
				t.Fatalf("%s: verify names %s as spent by %+v; the store says %+v (%v)", engineName, d.Output, d.Spender, resp, err)
			}
		}
		err = nil
	}
	if err != nil {
		t.Fatalf("%s: verify after the last step: %v", engineName, err)
	}
}

// pickBlock picks a block's transactions: from the a-th on, those not on
// the chain whose inputs the chain (or a transaction picked before) holds
// unspent, up to 1+b%3. When b is odd and the chain has spent an output,
// a transaction spending it again ends the block, which is then invalid;
// so does one spending an output past its transaction's, when a is odd.
func pickBlock(c *chainModel, txs []*chain.Tx, a, b int) (picked []*chain.Tx, valid bool) {
	pending := map[chainhash.Hash]int{}
	taken := map[wire.OutPoint]bool{}
	for i := range txs {
		tx := txs[(a+i)%len(txs)]
		if len(picked) > b%3 {
			break
		}
		if _, onChain := c.mined[tx.ID]; onChain {
			continue
		}
		spends := map[wire.OutPoint]bool{}
		for _, in := range tx.Msg.TxIn {
			if c.spendable(in.PreviousOutPoint, pending, taken) && !spends[in.PreviousOutPoint] {
				spends[in.PreviousOutPoint] = true
			}
		}
		if len(spends) < len(tx.Msg.TxIn) {
			continue // an input spends what it may not, or what another input does
		}
		picked = append(picked, tx)
		pending[tx.ID] = len(tx.Msg.TxOut)
		for op := range spends {
			taken[op] = true
		}
	}
	switch {
	case b%2 == 1 && len(c.spender) > 0:
		for op := range c.spender {
			return append(picked, spendTx(fmt.Sprint("double spend ", a, b), []wire.OutPoint{op}, 1, 1000)), false
		}
	case a%2 == 1:
		past := wire.OutPoint{Hash: txs[0].ID, Index: 9}
		return append(picked, spendTx(fmt.Sprint("no such output ", a, b), []wire.OutPoint{past}, 1, 1000)), false
	}
	return picked, true
}

// checkChainSpends compares the outputs of txs with the chain.
func checkChainSpends(t *testing.T, after string, db *DB, c *chainModel, txs []*chain.Tx) {
	t.Helper()
	for _, b := range c.blocks {
		for _, tx := range b.Txs {
			m, err := db.Get(ctx, tx.ID)
			if errors.Is(err, model.ErrTxNotFound) && c.fullySpent(tx) {
				continue // pruned
			}
			if err != nil {
				t.Fatalf("after %s: %s, of block %d: %v", after, tx.ID, b.Height, err)
			}
			if m.Conflicting || m.UnminedSince != 0 || len(m.BlockIDs) == 0 {
				t.Fatalf("after %s: %s, of block %d: conflicting %v, unmined since %d, blocks %v", after, tx.ID, b.Height, m.Conflicting, m.UnminedSince, m.BlockIDs)
			}
		}
	}
	for _, tx := range txs {
		n, onChain := c.mined[tx.ID]
		if !onChain {
			continue
		}
		if _, err := db.Get(ctx, tx.ID); errors.Is(err, model.ErrTxNotFound) && c.fullySpent(tx) {
			continue // pruned
		}
		for vout := range uint32(n) {
			op := wire.OutPoint{Hash: tx.ID, Index: vout}
			resp, err := db.GetSpend(ctx, &Spend{TxID: op.Hash, Vout: op.Index})
			if err != nil {
				t.Fatalf("after %s: %s, of the chain: %v", after, op, err)
			}
			want, spent := c.spender[op]
			if spent && (resp.SpendingData == nil || *resp.SpendingData != want) {
				t.Fatalf("after %s: the chain spends %s by %+v, the store says %+v", after, op, want, resp.SpendingData)
			}
			if !spent && resp.SpendingData != nil {
				if _, mined := c.mined[resp.SpendingData.TxID]; mined {
					t.Fatalf("after %s: %s, unspent on the chain, is spent by the chain's %s", after, op, resp.SpendingData.TxID)
				}
			}
		}
	}
}

// checkReturnedHoldTheirInputs checks that the transactions of
// disconnected blocks that are off the chain now hold their inputs, as
// unmined transactions do, unless they are conflicting (they lost an input
// to a transaction a block had made conflicting, or to a block since).
// One the store no longer holds (deleted at its delete-at-height, or as an
// old unmined transaction) leaves returned: a Create of it after that
// stores a new unmined transaction, which holds no input until it spends
// it.
func checkReturnedHoldTheirInputs(t *testing.T, after string, db *DB, c *chainModel, returned map[chainhash.Hash]*chain.Tx) {
	t.Helper()
	for _, tx := range returned {
		if _, onChain := c.mined[tx.ID]; onChain {
			continue
		}
		m, err := db.Get(ctx, tx.ID)
		if errors.Is(err, model.ErrTxNotFound) {
			delete(returned, tx.ID)
			continue
		}
		if err != nil {
			t.Fatalf("after %s: %s, of a disconnected block: %v", after, tx.ID, err)
		}
		if m.Conflicting {
			continue
		}
		if m.UnminedSince == 0 {
			t.Fatalf("after %s: %s, of a disconnected block and off the chain, is not unmined", after, tx.ID)
		}
		for vin, in := range tx.Msg.TxIn {
			resp, err := db.GetSpend(ctx, &Spend{TxID: in.PreviousOutPoint.Hash, Vout: in.PreviousOutPoint.Index})
			if errors.Is(err, model.ErrTxNotFound) {
				continue // the parent, fully spent, was pruned
			}
			if err != nil || resp.SpendingData == nil || *resp.SpendingData != (model.SpendingData{TxID: tx.ID, Vin: uint32(vin)}) {
				t.Fatalf("after %s: %s, unmined and not conflicting, does not hold its input %d, %s: %+v (%v)", after, tx.ID, vin, in.PreviousOutPoint, resp, err)
			}
		}
	}
}

// storeView is what the store holds of txs: each one's record, or the
// error reading it gives, with its spenders. A parent's conflicting
// children are left out: they keep every spender ever marked.
func storeView(t *testing.T, db *DB, txs []*chain.Tx) map[chainhash.Hash]string {
	t.Helper()
	view := map[chainhash.Hash]string{}
	for _, tx := range txs {
		m, err := db.Get(ctx, tx.ID, FieldOutputs)
		if errors.Is(err, model.ErrTxNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var spenders []string
		for _, o := range m.Outputs {
			spenders = append(spenders, fmt.Sprint(o.SpendingData))
		}
		view[tx.ID] = fmt.Sprintf("conflicting %v, blocks %v, unmined since %d, delete at %d, spent by %v",
			m.Conflicting, m.BlockIDs, m.UnminedSince, m.DeleteAtHeight, spenders)
	}
	return view
}

// createHeight is the next height, as a validator creates at, or, for an
// odd b, 0, as a gRPC client that leaves it unset does (the store takes
// it as its own height).
func createHeight(db *DB, b int) uint32 {
	if b%2 == 1 {
		return 0
	}
	return db.GetBlockHeight() + 1
}
