package utxo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/memory"
)

// countingEngine counts the engine batches a store sends.
type countingEngine struct {
	engine.Engine
	batches atomic.Int64
}

func (c *countingEngine) Update(ctx context.Context, updates []engine.Update) ([]error, error) {
	c.batches.Add(1)
	return c.Engine.Update(ctx, updates)
}

// Concurrent callers' writes go to the engine as one batch, and each caller
// gets its own outcome: the one create of an existing transaction is
// refused, the spend of a spent output too, and the others are applied.
func TestBatcherMergesConcurrentCallers(t *testing.T) {
	const callers = 32
	eng := &countingEngine{Engine: memory.New()}
	plain, err := Open(ctx, eng, Options{})
	if err != nil {
		t.Fatal(err)
	}
	parent := coinbaseTx("batch-parent", callers, 1000)
	mustCreate(t, plain, parent, 1, mined(1))
	existing := spendTx("batch-existing", []wire.OutPoint{out(parent, 0)}, 1, 900)
	mustCreate(t, plain, existing, 2, mined(2))
	if _, err := plain.Spend(ctx, existing, WithBlockHeight(200)); err != nil {
		t.Fatal(err)
	}

	// The batch closes when it holds one update per caller, long before
	// the wait: every caller is in it whatever the scheduling.
	db, err := Open(ctx, eng, Options{BatchWait: time.Minute, BatchOps: callers})
	if err != nil {
		t.Fatal(err)
	}
	txs := make([]*chain.Tx, callers)
	txs[0] = existing
	for i := 1; i < callers; i++ {
		txs[i] = spendTx(fmt.Sprintf("batch-%d", i), []wire.OutPoint{out(parent, uint32(i))}, 1, 900)
	}
	before := eng.batches.Load()
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i, tx := range txs {
		wg.Go(func() { _, errs[i] = db.Create(ctx, tx, 0) })
	}
	wg.Wait()
	if n := eng.batches.Load() - before; n != 1 {
		t.Fatalf("%d concurrent creates took %d engine batches, want 1", callers, n)
	}
	if !errors.Is(errs[0], ErrTxExists) {
		t.Fatalf("create of a stored transaction: %v, want TX_EXISTS", errs[0])
	}
	for i := 1; i < callers; i++ {
		if errs[i] != nil {
			t.Fatalf("create %d: %v", i, errs[i])
		}
		if meta := mustGet(t, db, txs[i].ID); meta.TxID != txs[i].ID {
			t.Fatalf("create %d stored %s", i, meta.TxID)
		}
	}

	// Spends: the one of an output already spent by another is refused.
	spenders := make([]*chain.Tx, callers)
	spenders[0] = spendTx("batch-thief", []wire.OutPoint{out(parent, 0)}, 1, 900)
	for i := 1; i < callers; i++ {
		spenders[i] = spendTx(fmt.Sprintf("batch-spender-%d", i), []wire.OutPoint{out(txs[i], 0)}, 1, 800)
	}
	for i, tx := range spenders {
		wg.Go(func() { _, errs[i] = db.Spend(ctx, tx, WithBlockHeight(200)) })
	}
	wg.Wait()
	if !errors.Is(errs[0], ErrSpent) {
		t.Fatalf("spend of a spent output: %v, want SPENT", errs[0])
	}
	for i := 1; i < callers; i++ {
		if errs[i] != nil {
			t.Fatalf("spend %d: %v", i, errs[i])
		}
	}
}
