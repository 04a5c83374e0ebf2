package utxo

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/utxo/model"
)

// countingEngine counts the engine batches a store sends and, while hold
// is set, holds each batch until it is released, as a slow fsync would.
type countingEngine struct {
	engine.Engine
	batches atomic.Int64
	hold    chan struct{} // receives one value per held batch
	arrived chan struct{} // signalled when a held batch reaches the engine
}

func (c *countingEngine) Update(ctx context.Context, updates []engine.Update) ([]error, error) {
	c.batches.Add(1)
	if c.hold != nil {
		c.arrived <- struct{}{}
		<-c.hold
	}
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

	// A lone caller goes straight to the engine. The callers that arrive
	// while its batch is there (held, as a slow fsync holds it) wait for
	// it and go together: one batch, closed when it holds one update per
	// caller, long before the wait is over, whatever the scheduling.
	db, err := Open(ctx, eng, Options{BatchWait: time.Minute, BatchOps: callers - 1})
	if err != nil {
		t.Fatal(err)
	}
	txs := make([]*chain.Tx, callers)
	txs[0] = existing
	for i := 1; i < callers; i++ {
		txs[i] = spendTx(fmt.Sprintf("batch-%d", i), []wire.OutPoint{out(parent, uint32(i))}, 1, 900)
	}
	before := eng.batches.Load()
	eng.hold, eng.arrived = make(chan struct{}), make(chan struct{})
	errs := make([]error, callers)
	var wg sync.WaitGroup
	wg.Go(func() { _, errs[0] = db.Create(ctx, txs[0], 0) })
	<-eng.arrived // the lone caller's batch is at the engine
	for i, tx := range txs[1:] {
		wg.Go(func() { _, errs[i+1] = db.Create(ctx, tx, 0) })
	}
	<-eng.arrived // the merged batch, closed full while the first is held
	eng.hold <- struct{}{}
	eng.hold <- struct{}{}
	wg.Wait()
	eng.hold = nil
	if n := eng.batches.Load() - before; n != 2 {
		t.Fatalf("a lone create and %d concurrent ones took %d engine batches, want 2", callers-1, n)
	}
	if !errors.Is(errs[0], model.ErrTxExists) {
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
	if !errors.Is(errs[0], model.ErrSpent) {
		t.Fatalf("spend of a spent output: %v, want SPENT", errs[0])
	}
	for i := 1; i < callers; i++ {
		if errs[i] != nil {
			t.Fatalf("spend %d: %v", i, errs[i])
		}
	}
}

// syncRecorder records which keys reached the engine in a batch whose
// context deferred its sync and which in one that did not, holding every
// batch until hold is closed.
type syncRecorder struct {
	engine.Engine
	arrived chan struct{} // signalled when a batch reaches the engine
	hold    chan struct{}

	mu                sync.Mutex
	deferred, durable map[engine.Key]bool
}

func (r *syncRecorder) Update(ctx context.Context, updates []engine.Update) ([]error, error) {
	r.mu.Lock()
	for _, u := range updates {
		if engine.SyncDeferred(ctx) {
			r.deferred[u.Key] = true
		} else {
			r.durable[u.Key] = true
		}
	}
	r.mu.Unlock()
	r.arrived <- struct{}{}
	<-r.hold
	return r.Engine.Update(ctx, updates)
}

// A write that defers its sync (a block's) is never merged with other
// callers' writes: had it opened the batch, the batch would go to the
// engine with its context, and a durable caller's write in it would be
// acknowledged without its fsync.
func TestBatcherLeavesDeferredWritesOut(t *testing.T) {
	eng := &syncRecorder{Engine: memory.New(), arrived: make(chan struct{}, 8), hold: make(chan struct{}),
		deferred: map[engine.Key]bool{}, durable: map[engine.Key]bool{}}
	db, err := Open(ctx, eng, Options{BatchWait: time.Minute, BatchOps: 2})
	if err != nil {
		t.Fatal(err)
	}
	write := func(ctx context.Context, n uint64) {
		u := engine.Update{Key: engine.Key{byte(n)}, Fn: func([]byte) (engine.Mutation, error) {
			return engine.Mutation{Action: engine.Put, Value: []byte{byte(n)}}, nil
		}}
		if _, err := db.update(ctx, []engine.Update{u}); err != nil {
			t.Error(err)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { write(ctx, 1) })
	<-eng.arrived // a lone caller's batch, held at the engine
	wg.Go(func() { write(engine.DeferSync(ctx), 2) })
	// The deferred write is either at the engine or waiting in a batch it
	// opened; either way it was there before the durable caller below.
	for atEngine := false; !atEngine; {
		db.batcher.mu.Lock()
		opened := db.batcher.open != nil
		db.batcher.mu.Unlock()
		if opened {
			break
		}
		select {
		case <-eng.arrived:
			atEngine = true
		default:
			runtime.Gosched()
		}
	}
	wg.Go(func() { write(ctx, 3) })
	close(eng.hold)
	wg.Wait()
	if k := (engine.Key{3}); eng.deferred[k] || !eng.durable[k] {
		t.Fatalf("a durable caller's write went to the engine in a batch that deferred its sync")
	}
	if k := (engine.Key{2}); !eng.deferred[k] || eng.durable[k] {
		t.Fatalf("the deferred write did not reach the engine as deferred")
	}
}
