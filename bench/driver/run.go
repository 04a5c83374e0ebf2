package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/bench/report"
	"github.com/utxostore/utxostore/bench/workload"
	"github.com/utxostore/utxostore/internal/benchmetric"
	"github.com/utxostore/utxostore/internal/latency"
	"github.com/utxostore/utxostore/utxo"
)

// Options tune a replay.
type Options struct {
	// SeriesEvery is the number of measured blocks per point of the
	// throughput series (at least 1).
	SeriesEvery int
}

// run is one replay in progress.
type run struct {
	t        Target
	opts     Options
	measured bool
	hists    map[report.Class]*latency.Hist
	items    map[report.Class]uint64
	res      *report.EngineResult
	// the current series interval
	blocks        int
	intervalItems uint64
	intervalTime  time.Duration
}

// Run replays the stream r against t and returns the measurements and the
// final summary. It stops at the first operation whose outcome is not the
// expected one.
func Run(ctx context.Context, t Target, r *workload.Reader, opts Options) (*report.EngineResult, error) {
	opts.SeriesEvery = max(1, opts.SeriesEvery)
	d := &run{t: t, opts: opts, hists: map[report.Class]*latency.Hist{}, items: map[report.Class]uint64{},
		res: &report.EngineResult{Classes: map[report.Class]report.ClassResult{}}}
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
		if err := d.apply(ctx, op); err != nil {
			return nil, fmt.Errorf("operation %d (%s): %w", n, op.Kind, err)
		}
	}
	d.res.WallSeconds = time.Since(start).Seconds()
	sum, err := t.Summary(ctx)
	if err != nil {
		return nil, fmt.Errorf("summary: %w", err)
	}
	d.res.Digest, d.res.Utxos, d.res.Satoshis = sum.Digest, sum.Utxos, sum.Satoshis
	for _, c := range report.Classes {
		h := d.hists[c]
		if h.Count() == 0 {
			continue
		}
		cr := report.ClassResult{Calls: h.Count(), Items: d.items[c], Seconds: h.Total().Seconds(),
			P50Micros: micros(h.Quantile(0.5)), P99Micros: micros(h.Quantile(0.99)), MaxMicros: micros(h.Max())}
		if cr.Seconds > 0 {
			cr.PerSecond = float64(cr.Items) / cr.Seconds
		}
		d.res.Classes[c] = cr
		d.res.StoreSeconds += cr.Seconds
	}
	return d.res, nil
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// timed runs one store call and, once measuring, records it.
func (d *run) timed(c report.Class, items int, call func() error) error {
	start := time.Now()
	err := call()
	elapsed := time.Since(start)
	if d.measured {
		d.hists[c].Record(elapsed)
		d.items[c] += uint64(items)
		d.intervalItems += uint64(items)
		d.intervalTime += elapsed
	}
	return err
}

// blockDone closes a block for the throughput series.
func (d *run) blockDone(live uint64) {
	if !d.measured {
		return
	}
	d.blocks++
	if d.blocks%d.opts.SeriesEvery != 0 || d.intervalTime <= 0 {
		return
	}
	d.res.Series = append(d.res.Series, report.Point{Live: live, PerSecond: float64(d.intervalItems) / d.intervalTime.Seconds()})
	d.intervalItems, d.intervalTime = 0, 0
}

func (d *run) apply(ctx context.Context, op *workload.Op) error {
	switch op.Kind {
	case workload.Measure:
		d.measured = true
	case workload.Submit:
		if err := d.timed(report.Spend, len(op.Tx.Msg.TxIn), func() error {
			_, err := d.t.Spend(ctx, op.Tx, nil, 0)
			return err
		}); err != nil {
			return fmt.Errorf("spending %s: %w", op.Tx.ID, err)
		}
		d.res.LogicalBytes += int64(benchmetric.OutpointBytes * len(op.Tx.Msg.TxIn))
		if err := d.timed(report.Create, 1, func() error { return d.t.Create(ctx, op.Tx, 0) }); err != nil {
			return fmt.Errorf("creating %s: %w", op.Tx.ID, err)
		}
		d.res.LogicalBytes += int64(len(op.Tx.Raw))
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
		d.res.LogicalBytes += int64(len(op.Block.Txs[0].Raw)) // the coinbase, the one new transaction
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
		if int(op.Input) >= len(errs) || !errors.Is(errs[op.Input], utxo.ErrSpent) {
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
