package workload

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo"
)

// FileStats describes a stream made from block files.
type FileStats struct {
	// Mode is "chain" when the files hold a chain from genesis (replayed
	// with Submit + ConnectBlock, like import) or "orphan" when blocks
	// miss their ancestors (replayed with Create + Spend per transaction,
	// skipping the inputs whose parents were never seen).
	Mode          string `json:"mode"`
	Blocks        int    `json:"blocks"`
	Txs           int    `json:"txs"`
	SkippedSpends int    `json:"skipped_spends"`
	DoubleSpends  int    `json:"double_spends"`
	Reads         int    `json:"reads"`
	FinalLive     uint64 `json:"final_live"`
}

// fileReadBatch is the outpoints read after each replayed block.
const fileReadBatch = 16

type fileBlock struct {
	header wire.BlockHeader
	hash   chainhash.Hash
	height uint32
	txs    []*chain.Tx
}

// FromFiles emits the replay of block files (blk*.dat or raw blocks, in
// the order given). After each block it also emits one double-spend
// attempt (of an input the block spent) and a read of a few live outputs,
// drawn with seed. The whole content is held in memory: the shared data
// files are a few MB.
func FromFiles(paths []string, seed uint64, emit func(*Op) error) (FileStats, error) {
	var blocks []*fileBlock
	for _, p := range paths {
		bs, err := readBlocks(p)
		if err != nil {
			return FileStats{}, err
		}
		blocks = append(blocks, bs...)
	}
	if len(blocks) == 0 {
		return FileStats{}, errors.New("workload: the block files hold no blocks")
	}
	r := &replayer{rng: rand.New(rand.NewPCG(seed, 0xb10c)), emit: emit, index: map[wire.OutPoint]int{}, known: map[chainhash.Hash]bool{}}
	if err := emit(&Op{Kind: Measure}); err != nil {
		return r.stats, err
	}
	if isChain(blocks) {
		r.stats.Mode = "chain"
		for i, b := range blocks {
			b.height = uint32(i)
			if err := r.chainBlock(b); err != nil {
				return r.stats, err
			}
		}
	} else {
		r.stats.Mode = "orphan"
		orderByHeight(blocks)
		for _, b := range blocks {
			if err := r.orphanBlock(b); err != nil {
				return r.stats, err
			}
		}
	}
	r.stats.FinalLive = uint64(len(r.live))
	return r.stats, nil
}

func readBlocks(path string) ([]*fileBlock, error) {
	f, err := chain.OpenBlockFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []*fileBlock
	for {
		br, err := f.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: block %d: %w", path, len(out), err)
		}
		info := br.Info()
		b := &fileBlock{header: info.Header, hash: info.Hash}
		for br.Remaining() > 0 {
			tx, err := br.Next()
			if err != nil {
				return nil, fmt.Errorf("%s: block %s: %w", path, b.hash, err)
			}
			b.txs = append(b.txs, tx)
		}
		out = append(out, b)
	}
}

// isChain reports whether the blocks start at genesis and each extends
// the one before.
func isChain(blocks []*fileBlock) bool {
	if blocks[0].header.PrevBlock != (chainhash.Hash{}) {
		return false
	}
	for i := 1; i < len(blocks); i++ {
		if blocks[i].header.PrevBlock != blocks[i-1].hash {
			return false
		}
	}
	return true
}

// orderByHeight sorts blocks by the BIP-34 height in their coinbase, which
// also gives them their heights (coinbase maturity is judged against them);
// a block without one keeps its place, one above the block before it.
func orderByHeight(blocks []*fileBlock) {
	for i, b := range blocks {
		h, ok := bip34Height(b.txs[0])
		if !ok {
			h = uint32(i)
			if i > 0 {
				h = blocks[i-1].height + 1
			}
		}
		b.height = h
	}
	sort.SliceStable(blocks, func(i, j int) bool { return blocks[i].height < blocks[j].height })
}

func bip34Height(cb *chain.Tx) (uint32, bool) {
	if !cb.IsCoinbase() {
		return 0, false
	}
	s := cb.Msg.TxIn[0].SignatureScript
	if len(s) < 2 || s[0] < 1 || s[0] > 4 || len(s) < 1+int(s[0]) {
		return 0, false
	}
	var h uint32
	for i := int(s[0]); i >= 1; i-- {
		h = h<<8 | uint32(s[i])
	}
	return h, true
}

// replayer turns blocks into operations, tracking the live outputs.
type replayer struct {
	rng   *rand.Rand
	emit  func(*Op) error
	live  []wire.OutPoint // for uniform draws
	index map[wire.OutPoint]int
	known map[chainhash.Hash]bool // transactions created so far
	stats FileStats
}

func (r *replayer) add(tx *chain.Tx) {
	r.known[tx.ID] = true
	for vout, out := range tx.Msg.TxOut {
		if !utxo.StoredAsUTXO(out) {
			continue
		}
		op := wire.OutPoint{Hash: tx.ID, Index: uint32(vout)}
		r.index[op] = len(r.live)
		r.live = append(r.live, op)
	}
}

// spend removes op from the live outputs (swap with the last).
func (r *replayer) spend(op wire.OutPoint) {
	i, ok := r.index[op]
	if !ok {
		return
	}
	last := r.live[len(r.live)-1]
	r.live[i] = last
	r.index[last] = i
	r.live = r.live[:len(r.live)-1]
	delete(r.index, op)
}

func (r *replayer) chainBlock(b *fileBlock) error {
	var spent []wire.OutPoint
	for _, tx := range b.txs {
		if !tx.IsCoinbase() {
			if err := r.emit(&Op{Kind: Submit, Tx: tx}); err != nil {
				return err
			}
			for _, in := range tx.Msg.TxIn {
				r.spend(in.PreviousOutPoint)
				spent = append(spent, in.PreviousOutPoint)
			}
		}
		r.add(tx)
	}
	r.stats.Blocks++
	r.stats.Txs += len(b.txs)
	blk := &utxo.Block{Hash: b.hash, PrevHash: b.header.PrevBlock, Height: b.height, Txs: b.txs, Header: &b.header}
	if err := r.emit(&Op{Kind: Connect, Block: blk, Live: uint64(len(r.live))}); err != nil {
		return err
	}
	return r.afterBlock(spent)
}

func (r *replayer) orphanBlock(b *fileBlock) error {
	var spent []wire.OutPoint
	for i, tx := range b.txs {
		op := &Op{Kind: Apply, Tx: tx, Height: b.height}
		if !tx.IsCoinbase() {
			op.Inputs = []uint32{}
			for vin, in := range tx.Msg.TxIn {
				if !r.known[in.PreviousOutPoint.Hash] {
					r.stats.SkippedSpends++
					continue
				}
				op.Inputs = append(op.Inputs, uint32(vin))
				r.spend(in.PreviousOutPoint)
				spent = append(spent, in.PreviousOutPoint)
			}
		}
		r.add(tx)
		if i == len(b.txs)-1 {
			op.Live = uint64(len(r.live))
		}
		if err := r.emit(op); err != nil {
			return err
		}
	}
	r.stats.Blocks++
	r.stats.Txs += len(b.txs)
	return r.afterBlock(spent)
}

// afterBlock emits a double-spend of one of the block's spends and a read
// of live outputs.
func (r *replayer) afterBlock(spent []wire.OutPoint) error {
	if len(spent) > 0 {
		target := spent[r.rng.IntN(len(spent))]
		tx := spendTx([]wire.OutPoint{target}, []*wire.TxOut{{Value: 1, PkScript: p2pkh(r.rng.Uint64(), 0)}})
		r.stats.DoubleSpends++
		if err := r.emit(&Op{Kind: DoubleSpend, Tx: tx}); err != nil {
			return err
		}
	}
	if len(r.live) == 0 {
		return nil
	}
	ops := make([]wire.OutPoint, min(fileReadBatch, len(r.live)))
	for i := range ops {
		ops[i] = r.live[r.rng.IntN(len(r.live))]
	}
	r.stats.Reads++
	return r.emit(&Op{Kind: Read, Outpoints: ops})
}
