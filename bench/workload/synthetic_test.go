package workload

import (
	"bytes"
	"crypto/sha256"
	"math"
	"sort"
	"testing"
)

func streamHash(t *testing.T, cfg Config) ([32]byte, Stats, []*Op) {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	var ops []*Op
	st, err := Generate(cfg, func(op *Op) error {
		ops = append(ops, op)
		return w.Write(op)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	// The stream must read back to the same operations.
	r := NewReader(bytes.NewReader(buf.Bytes()))
	for i := range ops {
		op, err := r.Next()
		if err != nil || op.Kind != ops[i].Kind || op.Fresh != ops[i].Fresh {
			t.Fatalf("reading back operation %d: %v %v", i, op, err)
		}
	}
	return sha256.Sum256(buf.Bytes()), st, ops
}

func TestDeterministic(t *testing.T) {
	cfg := Config{Seed: 42, Blocks: 30, TargetUTXOs: 2000, TxsPerBlock: Count{Min: 1, Mean: 30, Max: 300}, ReorgRate: 0.2, DoubleSpendsPerBlock: 1, ReadsPerBlock: 1}
	a, _, _ := streamHash(t, cfg)
	b, _, _ := streamHash(t, cfg)
	if a != b {
		t.Fatalf("same seed, different streams: %x vs %x", a, b)
	}
	cfg.Seed = 43
	if c, _, _ := streamHash(t, cfg); c == a {
		t.Fatal("different seeds gave the same stream")
	}
}

// within fails unless got is within tol (relative) of want.
func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*want {
		t.Errorf("%s = %.4f, want %.4f within %.0f%%", what, got, want, tol*100)
	} else {
		t.Logf("%s = %.4f (configured %.4f)", what, got, want)
	}
}

// TestDistributions checks, on the emitted operations, that the measured
// blocks follow the configuration.
func TestDistributions(t *testing.T) {
	cfg := Config{Seed: 3, Blocks: 400, TargetUTXOs: 20000,
		TxsPerBlock: Count{Min: 1, Mean: 60, Max: 2000}, Inputs: Count{Min: 1, Mean: 2, Max: 50}, Outputs: Count{Min: 1, Mean: 2.5, Max: 50},
		DataOutputRate: 0.1, ReorgRate: 0.1, ReorgDepth: Count{Min: 1, Mean: 2, Max: 6}, DoubleSpendsPerBlock: 0.5, ReadsPerBlock: 1}
	_, st, ops := streamHash(t, cfg)

	var measured bool
	var txs, ins, outs, data, connects, reorgs, doubles, disconnects int
	prevKind := Kind(0)
	for _, op := range ops {
		switch op.Kind {
		case Measure:
			measured = true
		case Submit:
			if measured {
				txs++
				ins += len(op.Tx.Msg.TxIn)
				for _, o := range op.Tx.Msg.TxOut {
					if o.Value == 0 && o.PkScript[0] == 0x6a {
						data++
					} else {
						outs++
					}
				}
			}
		case Connect:
			if measured {
				connects++
			}
		case Disconnect:
			disconnects++
			if prevKind != Disconnect {
				reorgs++
			}
		case DoubleSpend:
			doubles++
		}
		prevKind = op.Kind
	}
	// Each disconnected block comes back as a competing block.
	if newBlocks := connects - disconnects; newBlocks != cfg.Blocks || st.MeasuredBlocks != cfg.Blocks {
		t.Fatalf("%d measured blocks, stats %d, want %d", newBlocks, st.MeasuredBlocks, cfg.Blocks)
	}
	within(t, "transactions per block", float64(txs)/float64(cfg.Blocks), cfg.TxsPerBlock.Mean, 0.05)
	within(t, "inputs per transaction", float64(ins)/float64(txs), cfg.Inputs.Mean, 0.05)
	within(t, "outputs per transaction", float64(outs)/float64(txs), cfg.Outputs.Mean, 0.05)
	within(t, "data outputs per transaction", float64(data)/float64(txs), cfg.DataOutputRate, 0.15)
	// Reorgs and double spends are Bernoulli per block: allow four sigmas.
	sigma := func(p float64) float64 { return 4 * math.Sqrt(p*(1-p)/float64(cfg.Blocks)) / p }
	within(t, "reorgs per block", float64(reorgs)/float64(cfg.Blocks), cfg.ReorgRate, sigma(cfg.ReorgRate))
	within(t, "reorg depth", float64(disconnects)/float64(reorgs), cfg.ReorgDepth.Mean, 0.2)
	within(t, "double spends per block", float64(doubles)/float64(cfg.Blocks), cfg.DoubleSpendsPerBlock, sigma(cfg.DoubleSpendsPerBlock))
	if st.Reorgs != reorgs || st.DoubleSpends != doubles {
		t.Errorf("stats say %d reorgs, %d double spends; the stream has %d, %d", st.Reorgs, st.DoubleSpends, reorgs, doubles)
	}
	if st.ChainedInputs == 0 {
		t.Error("no input spends an output of its own block: no chains of unmined transactions")
	}
	// The set grows by outputs - inputs per transaction and a coinbase per
	// block from about the target (the warm-up overshoots by up to a block).
	drift := float64(cfg.Blocks) * (cfg.TxsPerBlock.Mean*(cfg.Outputs.Mean-cfg.Inputs.Mean) + 1)
	within(t, "final live set", float64(st.FinalLive), float64(cfg.TargetUTXOs)+drift, 0.1)
}

// TestSpendAgeLogUniform checks the spend-age draws against their
// distribution, P(rank < k) = log(k+1)/log(n): mapping each draw through
// that CDF (at the middle of its step) must give a uniform variable, whose
// quartiles are checked within 0.02.
func TestSpendAgeLogUniform(t *testing.T) {
	cfg := Config{Seed: 9, Blocks: 300, TargetUTXOs: 30000, TxsPerBlock: Count{Min: 1, Mean: 50, Max: 500}}
	_, st, _ := streamHash(t, cfg)
	if len(st.AgeDraws) < 10000 {
		t.Fatalf("only %d draws", len(st.AgeDraws))
	}
	u := make([]float64, len(st.AgeDraws))
	var old int
	for i, d := range st.AgeDraws {
		ln := math.Log(float64(d.Live))
		lo, hi := math.Log(float64(d.Rank+1))/ln, math.Min(1, math.Log(float64(d.Rank+2))/ln)
		u[i] = (lo + hi) / 2
		if d.Rank > d.Live/2 {
			old++
		}
	}
	sort.Float64s(u)
	for _, q := range []float64{0.25, 0.5, 0.75} {
		if got := u[int(q*float64(len(u)))]; math.Abs(got-q) > 0.02 {
			t.Errorf("quantile %.2f of the spend-age PIT = %.3f", q, got)
		}
	}
	// Heavy tail: some spends reach the older half of the set, most do not.
	frac := float64(old) / float64(len(u))
	if frac <= 0 || frac > 0.1 {
		t.Errorf("%.3f of spends take the older half of the set", frac)
	}
	t.Logf("%d draws; %.4f of them in the older half", len(u), frac)
}

// TestWarmupConnectsFreshBlocks checks the warm-up's shape: blocks of up to
// WarmupTxsPerBlock one-input, WarmupFanout-output transactions, connected
// fresh with no submit before them, ending at the target; measured blocks
// submit every transaction first. The same seed gives the same stream.
func TestWarmupConnectsFreshBlocks(t *testing.T) {
	cfg := Config{Seed: 5, Blocks: 20, TargetUTXOs: 50_000, WarmupTxsPerBlock: 700, WarmupFanout: 30,
		TxsPerBlock: Count{Min: 1, Mean: 50, Max: 500}, ReorgRate: 0.2, DoubleSpendsPerBlock: 1, ReadsPerBlock: 1}
	sha, st, ops := streamHash(t, cfg)
	if again, _, _ := streamHash(t, cfg); again != sha {
		t.Fatalf("same seed, different streams: %x vs %x", sha, again)
	}
	var measured bool
	var warmupTxs, fresh, submits int
	var liveAtMeasure uint64
	for _, op := range ops {
		switch op.Kind {
		case Measure:
			measured = true
		case Submit:
			if !measured {
				t.Fatal("a warm-up transaction is submitted; warm-up blocks connect fresh")
			}
			submits++
		case Connect:
			if op.Fresh == measured && len(op.Block.Txs) > 1 {
				t.Fatalf("block at height %d: fresh %v, measured %v", op.Block.Height, op.Fresh, measured)
			}
			if measured {
				continue
			}
			fresh++
			liveAtMeasure = op.Live
			if n := len(op.Block.Txs) - 1; n > cfg.WarmupTxsPerBlock {
				t.Fatalf("warm-up block of %d transactions, configured %d", n, cfg.WarmupTxsPerBlock)
			}
			for _, tx := range op.Block.Txs[1:] {
				warmupTxs++
				if len(tx.Msg.TxIn) != 1 || len(tx.Msg.TxOut) < cfg.WarmupFanout {
					t.Fatalf("warm-up tx %s has %d inputs, %d outputs", tx.ID, len(tx.Msg.TxIn), len(tx.Msg.TxOut))
				}
			}
		}
	}
	if submits != st.MeasuredTxs || st.MeasuredBlocks != cfg.Blocks {
		t.Errorf("%d submits, stats %d measured txs in %d blocks", submits, st.MeasuredTxs, st.MeasuredBlocks)
	}
	// The set grows by fanout-1 per warm-up tx and reaches the target
	// within one transaction.
	if liveAtMeasure < uint64(cfg.TargetUTXOs) || liveAtMeasure >= uint64(cfg.TargetUTXOs+cfg.WarmupFanout) {
		t.Errorf("warm-up ended at %d UTXOs, target %d", liveAtMeasure, cfg.TargetUTXOs)
	}
	if minTxs := cfg.TargetUTXOs / cfg.WarmupFanout; warmupTxs < minTxs || fresh > st.WarmupBlocks {
		t.Errorf("%d warm-up txs in %d fresh blocks (%d warm-up blocks)", warmupTxs, fresh, st.WarmupBlocks)
	}
	t.Logf("stream sha256 %x: %d warm-up txs in %d fresh blocks, %d UTXOs at measure", sha, warmupTxs, fresh, liveAtMeasure)
}
