package workload

import (
	"errors"
	"math/rand/v2"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/internal/agerank"
	"github.com/utxostore/utxostore/internal/benchmetric"
	"github.com/utxostore/utxostore/utxo"
	"github.com/utxostore/utxostore/utxo/model"
)

// maturity is the coinbase maturity: a coinbase of height h is spendable
// in the block at height h+maturity.
const maturity = model.CoinbaseMaturity

// recentSpends is how many blocks back double-spend targets are drawn
// from: far below the store's retention (288 blocks), so the spent output's
// transaction is still there to answer SPENT rather than TX_NOT_FOUND.
const recentSpends = 50

// AgeDraw is one spend-age draw: the rank (0: the newest spendable
// output) chosen among Live spendable outputs.
type AgeDraw struct {
	Rank, Live int
}

// Stats describes a generated stream, for tests and the report.
type Stats struct {
	Blocks         int    `json:"blocks"` // connected, competing ones included
	WarmupBlocks   int    `json:"warmup_blocks"`
	MeasuredBlocks int    `json:"measured_blocks"`
	MeasuredTxs    int    `json:"measured_txs"` // non-coinbase, measured blocks
	Reorgs         int    `json:"reorgs"`
	ReorgBlocks    int    `json:"reorg_blocks"`
	DoubleSpends   int    `json:"double_spends"`
	Reads          int    `json:"reads"`
	ChainedInputs  int    `json:"chained_inputs"` // spending an output of the same block
	FinalLive      uint64 `json:"final_live"`
	// Set is Bitcoin Core's statistics of the chain's final UTXO set
	// (txouts, total_amount, muhash), kept as the chain was generated when
	// Config.SetStats asks: a reference for a set too large for the map.
	Set *coinstats.Summary `json:"set,omitempty"`
	// SetMinimalBytes is the set's minimal serialised size then
	// (benchmetric.MinimalUTXOBytes of each of its coins).
	SetMinimalBytes uint64    `json:"set_minimal_bytes,omitempty"`
	AgeDraws        []AgeDraw `json:"-"`
}

// generator builds the synthetic chain.
type generator struct {
	cfg      Config
	rng      *rand.Rand
	emit     func(*Op) error
	live     liveSet
	immature []liveOut // coinbase outputs by height, not yet spendable
	height   uint32    // height of the next block
	tip      chainhash.Hash
	branch   uint32
	recent   []*utxo.Block     // the last blocks, for reorgs
	spent    [][]wire.OutPoint // outputs spent per recent block
	measured bool
	stats    Stats
	set      *coinstats.Stats // the chain's set's, when Config.SetStats
	setBytes uint64           // the set's minimal size, when Config.SetStats
}

// Generate emits the synthetic chain of cfg, one operation at a time: the
// same Config gives the same operations, byte for byte. The chain starts at
// genesis with coinbase-only blocks until the first coinbase matures, grows
// the live set to cfg.TargetUTXOs with blocks of fan-out transactions
// connected fresh (the warm-up), emits Measure, then cfg.Blocks measured
// blocks, their transactions submitted before the block connects, with
// reorgs, double-spend attempts and reads. The generator holds about 25
// bytes per output ever created (liveSet) and the last few blocks, never
// the stream.
func Generate(cfg Config, emit func(*Op) error) (Stats, error) {
	// A negative count is a mistake, not a request for the default.
	if cfg.Blocks < 0 || cfg.TargetUTXOs < 0 {
		return Stats{}, errors.New("workload: blocks and target UTXOs must be >= 0")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return Stats{}, err
	}
	g := &generator{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed)), emit: emit}
	if cfg.SetStats {
		g.set = new(coinstats.Stats)
	}
	for g.height < maturity {
		if err := g.block(); err != nil {
			return g.stats, err
		}
		g.stats.WarmupBlocks++
	}
	for g.liveCount() < uint64(cfg.TargetUTXOs) {
		if err := g.block(); err != nil {
			return g.stats, err
		}
		g.stats.WarmupBlocks++
	}
	if err := emit(&Op{Kind: Measure}); err != nil {
		return g.stats, err
	}
	g.measured = true
	for i := 0; i < cfg.Blocks; i++ {
		if err := g.block(); err != nil {
			return g.stats, err
		}
		g.stats.MeasuredBlocks++
		if err := g.afterBlock(); err != nil {
			return g.stats, err
		}
	}
	g.stats.FinalLive = g.liveCount()
	if g.set != nil {
		sum := g.set.Finalize()
		g.stats.Set, g.stats.SetMinimalBytes = &sum, g.setBytes
	}
	return g.stats, nil
}

// counted counts the outputs of tx, mined at height, into the set's
// statistics (add), or takes them back out (a reorganisation disconnects
// only coinbases, which nothing spent yet).
func (g *generator) counted(tx *chain.Tx, height uint32, add bool) {
	if g.set == nil {
		return
	}
	for vout, out := range tx.Msg.TxOut {
		g.count(&coinstats.Coin{Outpoint: coinstats.Outpoint{TxID: tx.ID, Vout: uint32(vout)}, Height: height,
			Coinbase: tx.IsCoinbase(), Value: uint64(out.Value), Script: out.PkScript}, add)
	}
}

// count adds c to the set's statistics and size, or takes it out.
func (g *generator) count(c *coinstats.Coin, add bool) {
	switch {
	case g.set == nil:
	case add && g.set.Add(c):
		g.setBytes += benchmetric.MinimalUTXOBytes(len(c.Script))
	case !add && g.set.Remove(c):
		g.setBytes -= benchmetric.MinimalUTXOBytes(len(c.Script))
	}
}

// spend takes a spent output out of the set's statistics, its script made
// again from its transaction's seed.
func (g *generator) spend(op wire.OutPoint, value int64, tx txMeta) {
	if g.set == nil {
		return
	}
	g.count(&coinstats.Coin{Outpoint: coinstats.Outpoint{TxID: op.Hash, Vout: op.Index}, Height: tx.height,
		Coinbase: tx.coinbase, Value: uint64(value), Script: p2pkh(tx.scriptSeed, op.Index)}, false)
}

// liveCount is the UTXO set size: spendable and immature outputs.
func (g *generator) liveCount() uint64 { return uint64(g.live.alive() + len(g.immature)) }

// block builds, submits and connects the block at g.height.
func (g *generator) block() error {
	h := g.height
	for len(g.immature) > 0 && g.immature[0].height+maturity <= h {
		cb := g.immature[0]
		g.live.add(g.live.addTx(cb.op.Hash, txMeta{scriptSeed: cb.scriptSeed, height: cb.height, coinbase: true}), cb.op.Index, cb.value)
		g.immature = g.immature[1:]
	}
	firstNew := g.live.len() // outputs from here on are this block's
	n := g.cfg.WarmupTxsPerBlock
	if g.measured {
		n = g.cfg.TxsPerBlock.Sample(g.rng)
	}
	txs := make([]*chain.Tx, 1, n+1)
	var spent []wire.OutPoint
	var fees int64
	// A warm-up block ends early at the target, so that the measured
	// blocks start at it whatever the size of warm-up blocks.
	for i := 0; i < n && g.live.alive() > 0 && (g.measured || g.liveCount() < uint64(g.cfg.TargetUTXOs)); i++ {
		nIn, nOut := 1, g.cfg.WarmupFanout
		if g.measured {
			nIn, nOut = g.cfg.Inputs.Sample(g.rng), g.cfg.Outputs.Sample(g.rng)
		}
		nIn = min(nIn, g.live.alive())
		ins := make([]wire.OutPoint, nIn)
		var sum int64
		for j := range ins {
			r := g.spendRank()
			if g.measured {
				g.stats.AgeDraws = append(g.stats.AgeDraws, AgeDraw{Rank: r, Live: g.live.alive()})
			}
			idx := g.live.newest(r)
			if idx >= firstNew {
				g.stats.ChainedInputs++
			}
			op, value, from := g.live.remove(idx)
			g.spend(op, value, from)
			ins[j] = op
			sum += value
		}
		fee := min(sum, 200+int64(nIn)*150)
		fees += fee
		scriptSeed := g.rng.Uint64()
		outs := g.split(sum-fee, nOut, scriptSeed)
		tx := spendTx(ins, outs)
		txIndex := g.live.addTx(tx.ID, txMeta{scriptSeed: scriptSeed, height: h})
		for vout, out := range outs {
			if out.Value == 0 && out.PkScript[0] == 0x6a {
				continue // data carrier: never a UTXO
			}
			g.live.add(txIndex, uint32(vout), out.Value)
		}
		spent = append(spent, ins...)
		txs = append(txs, tx)
		if !g.measured {
			continue // a warm-up block is connected fresh
		}
		g.stats.MeasuredTxs++
		if err := g.emit(&Op{Kind: Submit, Tx: tx}); err != nil {
			return err
		}
	}
	subsidy := int64(50_0000_0000) >> (h / 210_000)
	scriptSeed := g.rng.Uint64()
	txs[0] = coinbaseTx(scriptSeed, h, g.branch, g.cfg.Seed, subsidy+fees)
	g.immature = append(g.immature, liveOut{op: wire.OutPoint{Hash: txs[0].ID}, value: subsidy + fees, height: h, scriptSeed: scriptSeed})
	for _, tx := range txs {
		g.counted(tx, h, true)
	}
	b := newBlock(g.tip, h, txs)
	g.tip = b.Hash
	g.height++
	g.remember(b, spent)
	g.stats.Blocks++
	return g.emit(&Op{Kind: Connect, Block: b, Live: g.liveCount(), Fresh: !g.measured})
}

// spendRank draws the age rank of the output to spend from a log-uniform
// distribution over the live set (agerank.LogUniform): half the spends take
// the newest sqrt(n) outputs, and the older an output already is, the less
// likely it is to be spent next (the Lindy effect).
func (g *generator) spendRank() int {
	return agerank.LogUniform(g.rng.Float64(), g.live.alive())
}

// split divides value over n P2PKH outputs, their scripts made from
// scriptSeed, with random weights and, with probability DataOutputRate,
// appends a zero-value OP_RETURN output.
func (g *generator) split(value int64, n int, scriptSeed uint64) []*wire.TxOut {
	weights := make([]float64, n)
	var total float64
	for i := range weights {
		weights[i] = 0.1 + g.rng.Float64()
		total += weights[i]
	}
	outs := make([]*wire.TxOut, 0, n+1)
	left := value
	for i := range weights {
		v := int64(float64(value) * weights[i] / total)
		if i == n-1 {
			v = left
		}
		left -= v
		outs = append(outs, &wire.TxOut{Value: v, PkScript: p2pkh(scriptSeed, uint32(i))})
	}
	if g.rng.Float64() < g.cfg.DataOutputRate {
		outs = append(outs, &wire.TxOut{Value: 0, PkScript: dataScript(g.rng)})
	}
	return outs
}

// remember keeps the last blocks (as many as the deepest reorg replaces)
// and their spends (for double-spend targets).
func (g *generator) remember(b *utxo.Block, spent []wire.OutPoint) {
	g.recent = append(g.recent, b)
	if len(g.recent) > g.cfg.ReorgDepth.Max {
		g.recent = g.recent[1:]
	}
	g.spent = append(g.spent, spent)
	if len(g.spent) > recentSpends {
		g.spent = g.spent[1:]
	}
}

// afterBlock emits a measured block's double-spend attempts, reads and,
// sometimes, a reorganisation.
func (g *generator) afterBlock() error {
	n := int(g.cfg.DoubleSpendsPerBlock)
	if g.rng.Float64() < g.cfg.DoubleSpendsPerBlock-float64(n) {
		n++
	}
	for i := 0; i < n; i++ {
		if err := g.doubleSpend(); err != nil {
			return err
		}
	}
	for i := 0; i < g.cfg.ReadsPerBlock && g.live.alive() > 0; i++ {
		ops := make([]wire.OutPoint, g.cfg.ReadBatch)
		for j := range ops {
			ops[j] = g.live.outpoint(g.live.newest(g.spendRank()))
		}
		g.stats.Reads++
		if err := g.emit(&Op{Kind: Read, Outpoints: ops}); err != nil {
			return err
		}
	}
	if g.rng.Float64() < g.cfg.ReorgRate {
		return g.reorg(min(g.cfg.ReorgDepth.Sample(g.rng), len(g.recent)))
	}
	return nil
}

// doubleSpend emits a transaction spending an output some recent block
// spent, next to an unspent one: the store must refuse the first with
// SPENT and leave the second unspent (a spend is all or nothing).
func (g *generator) doubleSpend() error {
	var pool []wire.OutPoint
	for tries := 0; tries < 8 && len(pool) == 0; tries++ {
		pool = g.spent[g.rng.IntN(len(g.spent))]
	}
	if len(pool) == 0 {
		return nil
	}
	target := pool[g.rng.IntN(len(pool))]
	ins := []wire.OutPoint{target}
	input := uint32(0)
	if g.live.alive() > 0 {
		other := g.live.outpoint(g.live.kth(1 + g.rng.IntN(g.live.alive())))
		ins = append(ins, other)
		if g.rng.IntN(2) == 0 {
			ins[0], ins[1], input = ins[1], ins[0], 1
		}
	}
	tx := spendTx(ins, []*wire.TxOut{{Value: 1000, PkScript: p2pkh(g.rng.Uint64(), 0)}})
	g.stats.DoubleSpends++
	return g.emit(&Op{Kind: DoubleSpend, Tx: tx, Input: input})
}

// reorg replaces the last depth blocks with a competing branch: the tip is
// disconnected first, then blocks at the same heights are connected with
// the same transactions and new coinbases (a new miner). The old coinbases
// vanish from the set and the new ones take their place; coinbases this
// recent cannot have been spent, which is why depth is kept below the
// maturity.
func (g *generator) reorg(depth int) error {
	if depth <= 0 {
		return nil
	}
	g.branch++
	old := g.recent[len(g.recent)-depth:]
	live := g.liveCount()
	for i := len(old) - 1; i >= 0; i-- {
		if err := g.emit(&Op{Kind: Disconnect, Block: old[i]}); err != nil {
			return err
		}
		g.counted(old[i].Txs[0], old[i].Height, false)
	}
	prev := old[0].PrevHash
	for i, b := range old {
		subsidy := int64(50_0000_0000) >> (b.Height / 210_000)
		value := subsidy
		for _, out := range b.Txs[0].Msg.TxOut {
			value = out.Value // keep the fees the old coinbase collected
		}
		scriptSeed := g.rng.Uint64()
		cb := coinbaseTx(scriptSeed, b.Height, g.branch, g.cfg.Seed, value)
		for j := range g.immature {
			if g.immature[j].height == b.Height {
				g.immature[j].op, g.immature[j].scriptSeed = wire.OutPoint{Hash: cb.ID}, scriptSeed
			}
		}
		g.counted(cb, b.Height, true)
		nb := newBlock(prev, b.Height, append([]*chain.Tx{cb}, b.Txs[1:]...))
		prev = nb.Hash
		old[i] = nb // g.recent now holds the new branch
		g.stats.Blocks++
		if err := g.emit(&Op{Kind: Connect, Block: nb, Live: live}); err != nil {
			return err
		}
	}
	g.tip = prev
	g.stats.Reorgs++
	g.stats.ReorgBlocks += depth
	return nil
}
