package driver_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/chain"
	"path/filepath"
	"testing"

	"github.com/utxostore/utxostore/bench/driver"
	"github.com/utxostore/utxostore/bench/report"
	"github.com/utxostore/utxostore/bench/workload"
	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/engine/memory"
	"github.com/utxostore/utxostore/internal/testdata"
	"github.com/utxostore/utxostore/utxo"
)

// stream generates a small synthetic stream.
func stream(t *testing.T, cfg workload.Config) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := workload.NewWriter(&buf)
	if _, err := workload.Generate(cfg, w.Write); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// mapAndMemory replays one stream of cfg against the map reference and
// against the store over the memory engine with opts.
func mapAndMemory(t *testing.T, cfg workload.Config, opts driver.Options) (mapRes, memRes *report.EngineResult) {
	t.Helper()
	ctx := context.Background()
	data := stream(t, cfg)
	mapRes, err := driver.Run(ctx, driver.NewMap(), workload.NewReader(bytes.NewReader(data)), driver.Options{})
	if err != nil {
		t.Fatalf("map: %v", err)
	}
	db, err := utxo.Open(ctx, memory.New(), utxo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	memRes, err = driver.Run(ctx, driver.Store{DB: db}, workload.NewReader(bytes.NewReader(data)), opts)
	if err != nil {
		t.Fatalf("memory (%+v): %v", opts, err)
	}
	return mapRes, memRes
}

// TestMemoryMatchesMap replays one stream against the map reference and the
// store over the memory engine: every operation must have its expected
// outcome, and the final digests must be equal.
func TestMemoryMatchesMap(t *testing.T) {
	cfg := workload.Config{Seed: 7, Blocks: 40, TargetUTXOs: 3000, TxsPerBlock: workload.Count{Min: 1, Mean: 40, Max: 400},
		ReorgRate: 0.2, DoubleSpendsPerBlock: 1.5, ReadsPerBlock: 1}
	mapRes, memRes := mapAndMemory(t, cfg, driver.Options{SeriesEvery: 5})
	if mapRes.Digest != memRes.Digest || mapRes.Utxos != memRes.Utxos || mapRes.Satoshis != memRes.Satoshis {
		t.Fatalf("map %s (%d utxos, %d sats) != memory %s (%d utxos, %d sats)", mapRes.Digest, mapRes.Utxos, mapRes.Satoshis, memRes.Digest, memRes.Utxos, memRes.Satoshis)
	}
	if memRes.Utxos < 3000 {
		t.Errorf("final set %d UTXOs, want about the 3000 target or more", memRes.Utxos)
	}
	// Reorgs connect blocks too, so there are at least 40/5 points.
	if len(memRes.Series) < 8 {
		t.Errorf("series has %d points, want at least 40 blocks / 5", len(memRes.Series))
	}
	t.Logf("digest %s, %d utxos; memory classes %+v", memRes.Digest, memRes.Utxos, memRes.Classes)
}

// TestConcurrentClientsMatchMap submits each block's transactions from 16
// goroutines, many of them spending outputs of the same block: every spend
// must still find its output and the final state must be the map's.
func TestConcurrentClientsMatchMap(t *testing.T) {
	cfg := workload.Config{Seed: 11, Blocks: 30, TargetUTXOs: 3000, TxsPerBlock: workload.Count{Min: 1, Mean: 80, Max: 400},
		ReorgRate: 0.2, DoubleSpendsPerBlock: 1.5, ReadsPerBlock: 1}
	mapRes, res := mapAndMemory(t, cfg, driver.Options{Clients: 16})
	if res.Digest != mapRes.Digest {
		t.Fatalf("16 clients reached digest %s, the map %s", res.Digest, mapRes.Digest)
	}
	if c := res.Classes["spend"]; c.Items == 0 || c.Seconds <= 0 {
		t.Fatalf("no spends measured: %+v", c)
	}
}

// replayFiles replays block files against the map and the memory engine
// and returns both results.
func replayFiles(t *testing.T, paths ...string) (mapDigest, memDigest string, skipped uint64) {
	t.Helper()
	ctx := context.Background()
	var buf bytes.Buffer
	w := workload.NewWriter(&buf)
	st, err := workload.FromFiles(paths, 1, w.Write)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", st)
	mapRes, err := driver.Run(ctx, driver.NewMap(), workload.NewReader(bytes.NewReader(buf.Bytes())), driver.Options{})
	if err != nil {
		t.Fatalf("map: %v", err)
	}
	db, err := utxo.Open(ctx, memory.New(), utxo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	memRes, err := driver.Run(ctx, driver.Store{DB: db}, workload.NewReader(bytes.NewReader(buf.Bytes())), driver.Options{})
	if err != nil {
		t.Fatalf("memory: %v", err)
	}
	if mapRes.SkippedSpends != uint64(st.SkippedSpends) || memRes.SkippedSpends != mapRes.SkippedSpends {
		t.Errorf("skipped spends: stream %d, map %d, memory %d", st.SkippedSpends, mapRes.SkippedSpends, memRes.SkippedSpends)
	}
	return mapRes.Digest, memRes.Digest, memRes.SkippedSpends
}

func TestReplayBSVOrphanBlocks(t *testing.T) {
	dir := testdata.Dir(t)
	paths, _ := filepath.Glob(filepath.Join(dir, "bsv-mainnet", "*.bin"))
	if len(paths) == 0 {
		t.Skip("no BSV block files")
	}
	mapDigest, memDigest, skipped := replayFiles(t, paths...)
	if mapDigest != memDigest {
		t.Fatalf("map %s != memory %s", mapDigest, memDigest)
	}
	if skipped == 0 {
		t.Error("no spend was skipped, but these blocks spend outputs of blocks not in the files")
	}
}

// connectCounting is the map reference, counting the blocks it connects.
type connectCounting struct {
	driver.Map
	connects *int
}

func (c connectCounting) Connect(ctx context.Context, b *utxo.Block) error {
	*c.connects++
	return c.Map.Connect(ctx, b)
}

// TestOnMeasureMarksTheEndOfTheWarmUp: OnMeasure (where bench starts its
// CPU profile) runs once, after every warm-up block and before the first
// measured one.
func TestOnMeasureMarksTheEndOfTheWarmUp(t *testing.T) {
	cfg := workload.Config{Seed: 3, Blocks: 20, TargetUTXOs: 2000, TxsPerBlock: workload.Count{Min: 1, Mean: 30, Max: 300}}
	connects, calls, warmUp := 0, 0, 0
	target := connectCounting{Map: driver.NewMap(), connects: &connects}
	opts := driver.Options{OnMeasure: func() { calls++; warmUp = connects }}
	res, err := driver.Run(context.Background(), target, workload.NewReader(bytes.NewReader(stream(t, cfg))), opts)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || warmUp == 0 {
		t.Fatalf("OnMeasure ran %d times, after %d warm-up blocks", calls, warmUp)
	}
	if measured := res.Classes[report.SetMined].Calls; uint64(connects-warmUp) != measured {
		t.Errorf("%d blocks connected after OnMeasure, %d measured", connects-warmUp, measured)
	}
}

// TestSetStatsDigestMatchesGenerator: the statistics the generator keeps
// of the chain's set (reorganisations, double spends and same-block spends
// included) are those the store keeps of the set it replayed, whose walk
// agrees with the map; a replay that ends with them reports their MuHash
// and counts.
func TestSetStatsDigestMatchesGenerator(t *testing.T) {
	cfg := workload.Config{Seed: 5, Blocks: 40, TargetUTXOs: 3000, TxsPerBlock: workload.Count{Min: 1, Mean: 40, Max: 400},
		ReorgRate: 0.3, DoubleSpendsPerBlock: 1, ReadsPerBlock: 1, SetStats: true}
	var buf bytes.Buffer
	w := workload.NewWriter(&buf)
	st, err := workload.Generate(cfg, w.Write)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if st.Set == nil || st.Set.TxOuts == 0 || st.Reorgs == 0 {
		t.Fatalf("the generator kept %+v over %d reorganisations", st.Set, st.Reorgs)
	}
	ctx := context.Background()
	m := driver.NewMap()
	mapRes, err := driver.Run(ctx, m, workload.NewReader(bytes.NewReader(buf.Bytes())), driver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db, err := utxo.Open(ctx, memory.New(), utxo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := driver.Run(ctx, driver.Store{DB: db}, workload.NewReader(bytes.NewReader(buf.Bytes())), driver.Options{SetStatsDigest: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Digest != st.Set.MuHash || res.Utxos != st.Set.TxOuts || res.Satoshis != st.Set.TotalAmount {
		t.Fatalf("the store's set statistics: muhash %s, %d txouts, %d sat; the generator's %+v", res.Digest, res.Utxos, res.Satoshis, *st.Set)
	}
	if sum, err := db.Summary(ctx); err != nil || sum.Digest != mapRes.Digest {
		t.Fatalf("the store's walk %s (%v), the map's %s", sum.Digest, err, mapRes.Digest)
	}
	if st.SetMinimalBytes != m.MinimalBytes() {
		t.Fatalf("the generator's set takes %d bytes at least, the map's %d", st.SetMinimalBytes, m.MinimalBytes())
	}
	if _, err := driver.Run(ctx, driver.NewMap(), workload.NewReader(bytes.NewReader(buf.Bytes())), driver.Options{SetStatsDigest: true}); err == nil {
		t.Fatal("the map, which keeps no set statistics, ended a replay with them")
	}
}

// TestGrowthSeries: the warm-up gets a point each time the live set has
// grown by GrowthStep, from its first block to the target.
func TestGrowthSeries(t *testing.T) {
	cfg := workload.Config{Seed: 3, Blocks: 5, TargetUTXOs: 3000, WarmupTxsPerBlock: 10, WarmupFanout: 20}
	_, res := mapAndMemory(t, cfg, driver.Options{GrowthStep: 500})
	if len(res.Growth) < 3000/500 {
		t.Fatalf("%d growth points for 3000 UTXOs at 500 a point: %+v", len(res.Growth), res.Growth)
	}
	for i, p := range res.Growth {
		if p.PerSecond <= 0 || i > 0 && p.Live < res.Growth[i-1].Live+500 {
			t.Fatalf("point %d of %+v", i, res.Growth)
		}
	}
	if last := res.Growth[len(res.Growth)-1].Live; last < 2500 {
		t.Fatalf("the growth series ends at %d live UTXOs, short of the 3000 target", last)
	}
}

// TestSkipResumesAfterABlock: a replay stopped after a measured block,
// where AfterBlock reports it, and resumed with Skip on the same target
// ends where one whole replay ends.
func TestSkipResumesAfterABlock(t *testing.T) {
	cfg := workload.Config{Seed: 5, Blocks: 20, TargetUTXOs: 2000, TxsPerBlock: workload.Count{Min: 1, Mean: 30, Max: 300},
		ReorgRate: 0.2, DoubleSpendsPerBlock: 1}
	data := stream(t, cfg)
	ctx := context.Background()
	var blocks []int
	whole, err := driver.Run(ctx, driver.NewMap(), workload.NewReader(bytes.NewReader(data)),
		driver.Options{AfterBlock: func(applied int, live uint64) { blocks = append(blocks, applied) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) < cfg.Blocks {
		t.Fatalf("AfterBlock ran %d times for %d measured blocks", len(blocks), cfg.Blocks)
	}

	// The state a kill after the middle block leaves: its operations
	// applied, and no more.
	stop := blocks[len(blocks)/2]
	var head bytes.Buffer
	w := workload.NewWriter(&head)
	r := workload.NewReader(bytes.NewReader(data))
	for range stop {
		op, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(op); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	m := driver.NewMap()
	if _, err := driver.Run(ctx, m, workload.NewReader(&head), driver.Options{}); err != nil {
		t.Fatal(err)
	}
	measured := false
	resumed, err := driver.Run(ctx, m, workload.NewReader(bytes.NewReader(data)),
		driver.Options{Skip: stop, OnMeasure: func() { measured = true }})
	if err != nil {
		t.Fatal(err)
	}
	if resumed.Digest != whole.Digest || !measured {
		t.Errorf("resumed after operation %d: digest %s, want %s (measuring: %v)", stop, resumed.Digest, whole.Digest, measured)
	}
	if got, want := resumed.Classes[report.SetMined].Calls, whole.Classes[report.SetMined].Calls; got == 0 || got >= want {
		t.Errorf("the resumption measured %d blocks of the whole replay's %d", got, want)
	}
}

// statsCounting is the store as a target, counting its SetStats calls.
type statsCounting struct {
	driver.Store
	calls *int
}

func (s statsCounting) SetStats(ctx context.Context) (coinstats.Summary, error) {
	*s.calls++
	return s.Store.SetStats(ctx)
}

// TestMeasuredBlocksStartWithTheWarmUpsStatistics: a target that keeps the
// set's statistics has them caught up with the warm-up's last block before
// the measured blocks begin, so that hashing the warm-up's coins does not
// run beside the measured blocks and count in their store time; and once
// more after the last block.
func TestMeasuredBlocksStartWithTheWarmUpsStatistics(t *testing.T) {
	cfg := workload.Config{Seed: 5, Blocks: 10, TargetUTXOs: 2000, TxsPerBlock: workload.Count{Min: 1, Mean: 30, Max: 300}}
	db, err := utxo.Open(context.Background(), memory.New(), utxo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	calls, atMeasure := 0, -1
	target := statsCounting{Store: driver.Store{DB: db}, calls: &calls}
	opts := driver.Options{OnMeasure: func() { atMeasure = calls }}
	if _, err := driver.Run(context.Background(), target, workload.NewReader(bytes.NewReader(stream(t, cfg))), opts); err != nil {
		t.Fatal(err)
	}
	if atMeasure != 1 || calls != 2 {
		t.Fatalf("SetStats was called %d times before the measured blocks and %d in all, want once and twice", atMeasure, calls)
	}
}

// parentHeld is the store, except that Create of one transaction, parent,
// does not return until the transactions that do not descend from it
// (release of them) are all created.
type parentHeld struct {
	driver.Store
	parent      chainhash.Hash
	independent map[chainhash.Hash]bool
	mu          sync.Mutex
	left        int
	released    chan struct{}
}

func (p *parentHeld) Create(ctx context.Context, tx *chain.Tx, height uint32) error {
	if tx.ID == p.parent {
		select {
		case <-p.released:
		case <-ctx.Done():
			return fmt.Errorf("the parent's creation waited for the others: %w", ctx.Err())
		}
	}
	if err := p.Store.Create(ctx, tx, height); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.independent[tx.ID] {
		if p.left--; p.left == 0 {
			close(p.released)
		}
	}
	return nil
}

// TestAPendingParentHoldsNoClient submits a block's transactions from two
// clients while one transaction's creation stays pending until every
// transaction not descending from it is created: only a driver that hands
// out the ready transactions, and never a child of a pending one, lets the
// other client create them all. A driver whose client waited for the
// parent would never finish.
func TestAPendingParentHoldsNoClient(t *testing.T) {
	cfg := workload.Config{Seed: 5, Blocks: 2, TargetUTXOs: 2000, TxsPerBlock: workload.Count{Min: 100, Mean: 200, Max: 300}, ReorgRate: -1}
	data := stream(t, cfg)
	// The first block's submissions, and in them the first transaction
	// with a child submitted after it.
	r := workload.NewReader(bytes.NewReader(data))
	var batch []*chain.Tx
	for {
		op, err := r.Next()
		if err != nil {
			t.Fatalf("no submitted block in the stream: %v", err)
		}
		if op.Kind == workload.Submit {
			batch = append(batch, op.Tx)
		} else if len(batch) > 0 {
			break
		}
	}
	inBatch := map[chainhash.Hash]bool{}
	held := &parentHeld{independent: map[chainhash.Hash]bool{}, released: make(chan struct{})}
	for _, tx := range batch {
		for _, in := range tx.Msg.TxIn {
			if inBatch[in.PreviousOutPoint.Hash] && held.parent == (chainhash.Hash{}) {
				held.parent = in.PreviousOutPoint.Hash
			}
		}
		inBatch[tx.ID] = true
	}
	descends := map[chainhash.Hash]bool{}
	for _, tx := range batch {
		for _, in := range tx.Msg.TxIn {
			if in.PreviousOutPoint.Hash == held.parent || descends[in.PreviousOutPoint.Hash] {
				descends[tx.ID] = true
			}
		}
	}
	for _, tx := range batch {
		if !descends[tx.ID] && tx.ID != held.parent {
			held.independent[tx.ID] = true
		}
	}
	held.left = len(held.independent)
	if held.parent == (chainhash.Hash{}) || held.left == 0 || len(descends) == 0 {
		t.Fatalf("the block of %d transactions has no parent with both a child and an unrelated transaction", len(batch))
	}
	db, err := utxo.Open(context.Background(), memory.New(), utxo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	held.Store = driver.Store{DB: db}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := driver.Run(ctx, held, workload.NewReader(bytes.NewReader(data)), driver.Options{Clients: 2}); err != nil {
		t.Fatalf("with %s pending, %d descendants and %d other transactions: %v", held.parent, len(descends), len(held.independent), err)
	}
}
