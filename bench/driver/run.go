package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/utxostore/utxostore/coinstats"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"golang.org/x/sync/errgroup"

	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/bench/report"
	"github.com/utxostore/utxostore/bench/workload"
	"github.com/utxostore/utxostore/internal/benchmetric"
	"github.com/utxostore/utxostore/internal/latency"
	"github.com/utxostore/utxostore/internal/sysstat"
	"github.com/utxostore/utxostore/utxo/model"
)

// Options tune a replay.
type Options struct {
	// SeriesEvery is the number of measured blocks per point of the
	// throughput series (at least 1).
	SeriesEvery int
	// GrowthStep is how many UTXOs the live set grows by, in the warm-up,
	// per point of the growth series (0: none).
	GrowthStep uint64
	// Clients is the number of goroutines that submit transactions
	// concurrently, as a validator does (0 or 1: one at a time). See
	// submitConcurrently.
	Clients int
	// OnMeasure, when set, is called once, as the measured blocks begin
	// (the warm-up is over): a profile of the measured part starts there.
	OnMeasure func()
	// SetStatsDigest ends the replay with the target's set statistics
	// (SetStats), kept block by block, instead of its Summary, a walk of
	// every record that holds the whole set in memory: the result's Digest
	// is their MuHash, and Utxos and Satoshis their txouts and
	// total_amount. The target must keep them.
	SetStatsDigest bool
	// Skip is the number of operations at the stream's start that the
	// target already holds (a replay killed after them): they are read
	// and not applied.
	Skip int
	// AfterBlock, when set, is called after each measured Connect with
	// the number of operations applied so far (all of them, the Connect
	// included), and the live set's size: a replay killed there resumes
	// with Skip set to it.
	AfterBlock func(applied int, live uint64)
}

// run is one replay in progress.
type run struct {
	t        Target
	opts     Options
	measured bool
	hists    map[report.Class]*latency.Hist
	items    map[report.Class]uint64
	res      *report.EngineResult
	// wall holds, when clients submit concurrently, the wall time charged
	// to each concurrent class (see submitConcurrently).
	wall map[report.Class]time.Duration
	// submits are the Submit operations waiting for the next other
	// operation, when Clients > 1.
	submits []*workload.Op
	// timedMu guards the measurements while clients run concurrently.
	timedMu sync.Mutex
	// the current series interval
	blocks        int
	intervalItems uint64
	intervalTime  time.Duration
	// the warm-up's current growth interval, and the live set size at
	// which it ends
	growthItems uint64
	growthTime  time.Duration
	growthEnd   uint64
}

// Run replays the stream r against t and returns the measurements and the
// final summary. It stops at the first operation whose outcome is not the
// expected one.
func Run(ctx context.Context, t Target, r *workload.Reader, opts Options) (*report.EngineResult, error) {
	opts.SeriesEvery = max(1, opts.SeriesEvery)
	d := &run{t: t, opts: opts, hists: map[report.Class]*latency.Hist{}, items: map[report.Class]uint64{},
		res: &report.EngineResult{Classes: map[report.Class]report.ClassResult{}}, wall: map[report.Class]time.Duration{}}
	for _, c := range report.Classes {
		d.hists[c] = &latency.Hist{}
	}
	start := time.Now()
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		op, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if n < opts.Skip {
			if op.Kind == workload.Measure {
				d.startMeasuring()
			}
			continue
		}
		if opts.Clients > 1 && op.Kind == workload.Submit {
			d.submits = append(d.submits, op)
			continue
		}
		if err := d.submitConcurrently(ctx); err != nil {
			return nil, err
		}
		if err := d.apply(ctx, op); err != nil {
			return nil, fmt.Errorf("operation %d (%s): %w", n, op.Kind, err)
		}
		if op.Kind == workload.Connect && d.measured && opts.AfterBlock != nil {
			opts.AfterBlock(n+1, op.Live)
		}
	}
	if err := d.submitConcurrently(ctx); err != nil {
		return nil, err
	}
	d.res.WallSeconds = time.Since(start).Seconds()
	d.res.ReplayPeakRSSBytes = sysstat.PeakRSS()
	s, keeps := t.(statsKeeper)
	if keeps {
		waited := time.Now()
		set, err := s.SetStats(ctx)
		if err != nil {
			return nil, fmt.Errorf("set statistics: %w", err)
		}
		d.res.StatsWaitSeconds = time.Since(waited).Seconds()
		if opts.SetStatsDigest {
			d.res.Digest, d.res.Utxos, d.res.Satoshis = set.MuHash, set.TxOuts, set.TotalAmount
		}
	}
	switch {
	case opts.SetStatsDigest && !keeps:
		return nil, fmt.Errorf("the target keeps no set statistics to end the replay with")
	case !opts.SetStatsDigest:
		sum, err := t.Summary(ctx)
		if err != nil {
			return nil, fmt.Errorf("summary: %w", err)
		}
		d.res.Digest, d.res.Utxos, d.res.Satoshis = sum.Digest, sum.Utxos, sum.Satoshis
	}
	for _, c := range report.Classes {
		h := d.hists[c]
		if h.Count() == 0 {
			continue
		}
		seconds := h.Total().Seconds()
		if wall, ok := d.wall[c]; ok {
			seconds = wall.Seconds()
		}
		cr := report.ClassResult{Calls: h.Count(), Items: d.items[c], Seconds: seconds,
			P50Micros: micros(h.Quantile(0.5)), P99Micros: micros(h.Quantile(0.99)), MaxMicros: micros(h.Max())}
		if cr.Seconds > 0 {
			cr.PerSecond = float64(cr.Items) / cr.Seconds
		}
		d.res.Classes[c] = cr
		d.res.StoreSeconds += cr.Seconds
	}
	return d.res, nil
}

// statsKeeper is a target that keeps the set's statistics, whose blocks'
// changes are worked out in the background (utxo.DB.SetStats waits for
// them): the wait after the last block is the work the store time leaves
// out.
type statsKeeper interface {
	SetStats(ctx context.Context) (coinstats.Summary, error)
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// submitConcurrently submits the pending transactions from opts.Clients
// goroutines, as a validator's workers do. A transaction spending an output
// of a pending one is handed to a client only once that one is created, as
// a validator validates a block's transactions level by level, parents
// first: no client sits idle waiting for a parent while others are ready,
// every spend finds its output and the final state is the sequential one.
// Ready transactions go out in stream order. The calls' latencies are
// recorded as usual; the spend and create classes are charged the phase's
// wall time, shared by their summed latencies, so their rates are what the
// concurrent callers achieved together.
func (d *run) submitConcurrently(ctx context.Context) error {
	if len(d.submits) == 0 {
		return nil
	}
	ops := d.submits
	d.submits = nil
	// waiting[i] counts the pending parents of ops[i]; children lists the
	// ops each pending op's creation releases.
	position := make(map[chainhash.Hash]int, len(ops))
	waiting := make([]int, len(ops))
	children := make([][]int, len(ops))
	ready := make(chan int, len(ops)) // never blocks: each op is sent once
	for i, op := range ops {
		seen := map[int]bool{}
		for _, in := range op.Tx.Msg.TxIn {
			if p, ok := position[in.PreviousOutPoint.Hash]; ok && !seen[p] {
				seen[p] = true
				waiting[i]++
				children[p] = append(children[p], i)
			}
		}
		position[op.Tx.ID] = i
		if waiting[i] == 0 {
			ready <- i
		}
	}
	before := map[report.Class]time.Duration{report.Spend: d.hists[report.Spend].Total(), report.Create: d.hists[report.Create].Total()}
	start := time.Now()
	var mu sync.Mutex // guards waiting and left
	left := len(ops)
	g, gctx := errgroup.WithContext(ctx)
	for range d.opts.Clients {
		g.Go(func() error {
			for {
				var i int
				var open bool
				select {
				case i, open = <-ready:
				case <-gctx.Done():
					return gctx.Err()
				}
				if !open {
					return nil
				}
				if err := d.apply(gctx, ops[i]); err != nil {
					return err
				}
				mu.Lock()
				for _, c := range children[i] {
					if waiting[c]--; waiting[c] == 0 {
						ready <- c
					}
				}
				if left--; left == 0 {
					close(ready)
				}
				mu.Unlock()
			}
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if !d.measured {
		return nil
	}
	wall := time.Since(start)
	var summed time.Duration
	for c, t := range before {
		summed += d.hists[c].Total() - t
	}
	if summed <= 0 {
		return nil
	}
	for c, t := range before {
		d.wall[c] += time.Duration(float64(wall) * float64(d.hists[c].Total()-t) / float64(summed))
	}
	return nil
}

// timed runs one store call and, once measuring, records it.
func (d *run) timed(c report.Class, items int, call func() error) error {
	start := time.Now()
	err := call()
	elapsed := time.Since(start)
	d.timedMu.Lock()
	defer d.timedMu.Unlock()
	if d.measured {
		d.hists[c].Record(elapsed)
		d.items[c] += uint64(items)
		d.intervalItems += uint64(items)
		d.intervalTime += elapsed
	} else {
		d.growthItems += uint64(items)
		d.growthTime += elapsed
	}
	return err
}

// addLogical counts logical bytes written (submits may run concurrently).
func (d *run) addLogical(n int) {
	d.timedMu.Lock()
	defer d.timedMu.Unlock()
	d.res.LogicalBytes += int64(n)
}

// blockDone closes a block for the throughput series.
func (d *run) blockDone(live uint64) {
	if !d.measured {
		d.grown(live)
		return
	}
	d.blocks++
	if d.blocks%d.opts.SeriesEvery != 0 || d.intervalTime <= 0 {
		return
	}
	d.res.Series = append(d.res.Series, report.Point{Live: live, PerSecond: float64(d.intervalItems) / d.intervalTime.Seconds()})
	d.intervalItems, d.intervalTime = 0, 0
}

// grown closes a warm-up block for the growth series: a point once the
// live set has grown by GrowthStep since the last.
func (d *run) grown(live uint64) {
	if d.opts.GrowthStep == 0 || live < d.growthEnd || d.growthTime <= 0 {
		return
	}
	d.res.Growth = append(d.res.Growth, report.Point{Live: live, PerSecond: float64(d.growthItems) / d.growthTime.Seconds()})
	d.growthItems, d.growthTime, d.growthEnd = 0, 0, live+d.opts.GrowthStep
}

// startMeasuring ends the warm-up.
func (d *run) startMeasuring() {
	d.measured = true
	if d.opts.OnMeasure != nil {
		d.opts.OnMeasure()
	}
}

func (d *run) apply(ctx context.Context, op *workload.Op) error {
	switch op.Kind {
	case workload.Measure:
		if s, keeps := d.t.(statsKeeper); keeps {
			waited := time.Now()
			if _, err := s.SetStats(ctx); err != nil {
				return fmt.Errorf("set statistics after the warm-up: %w", err)
			}
			d.res.WarmupStatsWaitSeconds = time.Since(waited).Seconds()
		}
		d.startMeasuring()
	case workload.Submit:
		if err := d.timed(report.Spend, len(op.Tx.Msg.TxIn), func() error {
			_, err := d.t.Spend(ctx, op.Tx, nil, 0)
			return err
		}); err != nil {
			return fmt.Errorf("spending %s: %w", op.Tx.ID, err)
		}
		d.addLogical(benchmetric.OutpointBytes * len(op.Tx.Msg.TxIn))
		if err := d.timed(report.Create, 1, func() error { return d.t.Create(ctx, op.Tx, 0) }); err != nil {
			return fmt.Errorf("creating %s: %w", op.Tx.ID, err)
		}
		d.addLogical(len(op.Tx.Raw))
	case workload.Apply:
		if err := d.timed(report.Create, 1, func() error { return d.t.Create(ctx, op.Tx, op.Height) }); err != nil {
			return fmt.Errorf("creating %s: %w", op.Tx.ID, err)
		}
		d.res.LogicalBytes += int64(len(op.Tx.Raw))
		if !op.Tx.IsCoinbase() {
			d.res.SkippedSpends += uint64(len(op.Tx.Msg.TxIn) - len(op.Inputs))
		}
		if len(op.Inputs) > 0 {
			if err := d.timed(report.Spend, len(op.Inputs), func() error {
				_, err := d.t.Spend(ctx, op.Tx, op.Inputs, op.Height)
				return err
			}); err != nil {
				return fmt.Errorf("spending %s: %w", op.Tx.ID, err)
			}
			d.res.LogicalBytes += int64(benchmetric.OutpointBytes * len(op.Inputs))
		}
		if op.Live != 0 {
			d.blockDone(op.Live)
		}
	case workload.Connect:
		if err := d.timed(report.SetMined, len(op.Block.Txs), func() error { return d.t.Connect(ctx, op.Block) }); err != nil {
			return fmt.Errorf("connecting %s at height %d: %w", op.Block.Hash, op.Block.Height, err)
		}
		d.res.LogicalBytes += int64(len(op.Block.Txs[0].Raw)) // the coinbase
		if op.Fresh {
			for _, tx := range op.Block.Txs[1:] { // new too, and spending
				d.res.LogicalBytes += int64(len(tx.Raw) + benchmetric.OutpointBytes*len(tx.Msg.TxIn))
			}
		}
		d.blockDone(op.Live)
	case workload.Disconnect:
		if err := d.timed(report.Disconnect, len(op.Block.Txs), func() error { return d.t.Disconnect(ctx, op.Block) }); err != nil {
			return fmt.Errorf("disconnecting %s at height %d: %w", op.Block.Hash, op.Block.Height, err)
		}
	case workload.DoubleSpend:
		var errs []error
		_ = d.timed(report.Reject, 1, func() error {
			errs, _ = d.t.Spend(ctx, op.Tx, nil, 0) // the refusal is the expected outcome
			return nil
		})
		if int(op.Input) >= len(errs) || !errors.Is(errs[op.Input], model.ErrSpent) {
			return fmt.Errorf("double spend %s was not refused with SPENT: %v", op.Tx.ID, errs)
		}
		// All or nothing: the other input must still be unspent.
		for i, in := range op.Tx.Msg.TxIn {
			if i == int(op.Input) {
				continue
			}
			ok, err := d.t.Unspent(ctx, []wire.OutPoint{in.PreviousOutPoint})
			if err != nil || !ok[0] {
				return fmt.Errorf("double spend %s left input %d spent (err %v)", op.Tx.ID, i, err)
			}
		}
	case workload.Read:
		var unspent []bool
		if err := d.timed(report.Read, len(op.Outpoints), func() (err error) {
			unspent, err = d.t.Unspent(ctx, op.Outpoints)
			return err
		}); err != nil {
			return err
		}
		for i, ok := range unspent {
			if !ok {
				return fmt.Errorf("read: %s should be unspent", op.Outpoints[i])
			}
		}
	default:
		return fmt.Errorf("unknown operation kind %d", op.Kind)
	}
	return nil
}
