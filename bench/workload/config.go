package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/utxostore/utxostore/internal/setting"
)

// Count is a distribution of small counts (transactions per block, inputs
// or outputs per transaction): Min plus a geometric number with mean
// Mean-Min, redrawn when above Max. Geometric because real counts are
// heavy on the minimum with a long tail (most transactions have one or two
// inputs, a few have dozens); the Max cut only trims the far tail, so the
// mean stays within a percent of Mean for the defaults.
type Count struct {
	Min  int     `json:"min"`
	Mean float64 `json:"mean"`
	Max  int     `json:"max"`
}

// Sample draws one count.
func (c Count) Sample(rng *rand.Rand) int {
	extra := c.Mean - float64(c.Min)
	if extra <= 0 {
		return c.Min
	}
	// Failures before the first success with p = 1/(1+extra) has mean extra.
	q := extra / (1 + extra)
	for {
		n := c.Min + int(math.Floor(math.Log(1-rng.Float64())/math.Log(q)))
		if c.Max <= 0 || n <= c.Max {
			return n
		}
	}
}

func (c Count) validate(name string) error {
	if c.Min < 0 || c.Mean < float64(c.Min) || (c.Max > 0 && float64(c.Max) < c.Mean) {
		return fmt.Errorf("workload: %s: need 0 <= min <= mean <= max, have %+v", name, c)
	}
	return nil
}

// Config configures the synthetic chain. Zero fields take the defaults of
// DefaultConfig.
type Config struct {
	Seed uint64 `json:"seed"`
	// Blocks is the number of measured blocks, after the warm-up.
	Blocks int `json:"blocks"`
	// TargetUTXOs is the live set size the warm-up grows to before the
	// measured blocks start (the live set then stays near it, drifting up
	// by about Outputs.Mean-Inputs.Mean per transaction plus a coinbase
	// per block).
	TargetUTXOs int `json:"target_utxos"`
	// TxsPerBlock, Inputs and Outputs are the measured blocks' shape.
	TxsPerBlock Count `json:"txs_per_block"`
	Inputs      Count `json:"inputs"`
	Outputs     Count `json:"outputs"`
	// WarmupFanout is the number of outputs of a warm-up transaction (which
	// has one input), and WarmupTxsPerBlock the number of transactions of
	// a warm-up block. Warm-up blocks are connected without their
	// transactions being submitted first (Op.Fresh), as a node catching up
	// connects blocks, so the warm-up costs one ConnectBlock per block:
	// that is what lets it reach tens of millions of UTXOs in minutes.
	WarmupFanout      int `json:"warmup_fanout"`
	WarmupTxsPerBlock int `json:"warmup_txs_per_block"`
	// DataOutputRate is the probability that a transaction also carries a
	// zero-value OP_RETURN output, which is never stored as a UTXO.
	DataOutputRate float64 `json:"data_output_rate"`
	// ReorgRate is the probability that a measured block is followed by a
	// reorganisation, of depth drawn from ReorgDepth (at most 99, so no
	// coinbase spent since the fork can be disconnected).
	ReorgRate  float64 `json:"reorg_rate"`
	ReorgDepth Count   `json:"reorg_depth"`
	// DoubleSpendsPerBlock is the mean number of double-spend attempts
	// after each measured block (the integer part always, the fraction as
	// a probability).
	DoubleSpendsPerBlock float64 `json:"double_spends_per_block"`
	// ReadsPerBlock batches of ReadBatch outpoints are read after each
	// measured block.
	ReadsPerBlock int `json:"reads_per_block"`
	ReadBatch     int `json:"read_batch"`
	// SetStats keeps Bitcoin Core's statistics of the chain's UTXO set as
	// the chain is generated (Stats.Set): a MuHash insertion or removal,
	// about 3 µs, for each output created or spent.
	SetStats bool `json:"set_stats,omitempty"`
}

// DefaultConfig is the synthetic workload of `utxostore bench`.
func DefaultConfig() Config {
	return Config{
		Seed:                 1,
		Blocks:               200,
		TargetUTXOs:          20000,
		TxsPerBlock:          Count{Min: 1, Mean: 200, Max: 2000},
		Inputs:               Count{Min: 1, Mean: 2, Max: 50},
		Outputs:              Count{Min: 1, Mean: 2.2, Max: 50},
		WarmupFanout:         20,
		WarmupTxsPerBlock:    10000,
		DataOutputRate:       0.05,
		ReorgRate:            0.05,
		ReorgDepth:           Count{Min: 1, Mean: 1.5, Max: 6},
		DoubleSpendsPerBlock: 1,
		ReadsPerBlock:        2,
		ReadBatch:            64,
	}
}

// withDefaults fills the unset fields (setting.Default). Rates keep their
// zero: a caller turning reorgs off sets ReorgRate to a negative value,
// read as zero.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	setting.Default(&c.Blocks, d.Blocks)
	setting.Default(&c.TxsPerBlock, d.TxsPerBlock)
	setting.Default(&c.Inputs, d.Inputs)
	setting.Default(&c.Outputs, d.Outputs)
	setting.Default(&c.ReorgDepth, d.ReorgDepth)
	setting.Default(&c.WarmupFanout, d.WarmupFanout)
	setting.Default(&c.WarmupTxsPerBlock, d.WarmupTxsPerBlock)
	setting.Default(&c.ReadBatch, d.ReadBatch)
	return c
}

func (c Config) validate() error {
	for name, cnt := range map[string]Count{"txs per block": c.TxsPerBlock, "inputs": c.Inputs, "outputs": c.Outputs, "reorg depth": c.ReorgDepth} {
		if err := cnt.validate(name); err != nil {
			return err
		}
	}
	if c.Inputs.Min < 1 || c.Outputs.Min < 1 {
		return errors.New("workload: transactions need at least one input and one output")
	}
	if c.ReorgDepth.Max > 99 || c.ReorgDepth.Max == 0 && c.ReorgRate > 0 {
		return errors.New("workload: reorg depth needs a max of at most 99 (coinbase maturity)")
	}
	if c.WarmupFanout < 2 {
		return errors.New("workload: warm-up fan-out must be >= 2")
	}
	return nil
}
