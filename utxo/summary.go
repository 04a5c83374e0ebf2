package utxo

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/utxo/record"
)

// Summary describes the UTXO set of the longest chain. Every engine holding
// the same chain gives the same Summary, so it doubles as a cross-engine
// correctness check.
type Summary struct {
	Blocks   uint64 `json:"blocks"`
	Txs      uint64 `json:"txs"`
	Utxos    uint64 `json:"utxos"`
	Satoshis uint64 `json:"satoshis"`
	Height   uint32 `json:"height"`
	// Digest is the SHA-256 of the lines "<txid>:<vout>:<satoshis>\n" of
	// every unspent output, txid as displayed, sorted by txid then vout.
	Digest string `json:"digest"`
	// TxOuts, TotalAmount and MuHash are the set's statistics as Bitcoin
	// Core's gettxoutsetinfo reports them (SetStats): the set without the
	// genesis block's outputs and without unspendable ones, so they can be
	// checked against any Core node at the same block. They come from the
	// chain state, not from the walk.
	TxOuts      uint64 `json:"txouts"`
	TotalAmount uint64 `json:"total_amount"`
	MuHash      string `json:"muhash"`
}

// summaryRun is the unspent outputs of one record of a transaction in the
// set, in vout order: the digest sorts runs rather than lines, so that it
// holds 16 bytes per UTXO (summaryLine) and a run per record, never the
// records themselves; a set of tens of millions of UTXOs fits in memory.
type summaryRun struct {
	display   chainhash.Hash // the txid's bytes reversed: hex of it is the displayed txid
	firstVout uint32
	lines     []summaryLine // within one chunk of summaryChunkLines
}

// summaryChunkLines is the size of the chunks the lines are kept in: a
// chunk is never grown, so a run's lines stay where they are and the walk
// never holds a slice twice, as growing one slice of every line would.
const summaryChunkLines = 1 << 16

// summaryLine is one unspent output of the digest.
type summaryLine struct {
	vout     uint32
	satoshis uint64
}

// Summary walks every record and summarises the unspent outputs of the
// transactions mined on the longest chain (frozen outputs are unspent; the
// outputs of unmined or conflicting transactions are not in the set).
func (db *DB) Summary(ctx context.Context) (Summary, error) {
	cs, stats, err := db.statsAtTip(ctx)
	if err != nil {
		return Summary{}, err
	}
	var runs []summaryRun
	var chunk []summaryLine
	var utxos uint64
	// addRun appends the unspent outputs of r, valued from tx.
	addRun := func(r *record.Record, tx *chain.Tx) error {
		if cap(chunk)-len(chunk) < len(r.Utxos) {
			chunk = make([]summaryLine, 0, max(summaryChunkLines, len(r.Utxos)))
		}
		start := len(chunk)
		run := summaryRun{firstVout: r.FirstVout}
		for j := range r.TxID {
			run.display[j] = r.TxID[len(r.TxID)-1-j]
		}
		for offset, e := range r.Utxos {
			if !e.Stored() || e.IsSpent() {
				continue
			}
			vout := r.FirstVout + uint32(offset)
			if int(vout) >= len(tx.Msg.TxOut) {
				return fmt.Errorf("record of %s names output %d of %d", r.TxID, vout, len(tx.Msg.TxOut))
			}
			chunk = append(chunk, summaryLine{vout: vout, satoshis: uint64(tx.Msg.TxOut[vout].Value)})
		}
		if run.lines = chunk[start:len(chunk):len(chunk)]; len(run.lines) > 0 {
			runs = append(runs, run)
			utxos += uint64(len(run.lines))
		}
		return nil
	}
	if err := db.walkSet(ctx, func(r *record.Record, st *setTx) error { return addRun(r, st.tx) }); err != nil {
		return Summary{}, err
	}
	slices.SortFunc(runs, func(a, b summaryRun) int {
		if c := bytes.Compare(a.display[:], b.display[:]); c != 0 {
			return c
		}
		return cmp.Compare(a.firstVout, b.firstVout)
	})
	core := stats.Finalize()
	h := sha256.New()
	sum := Summary{Blocks: cs.Blocks, Txs: cs.Txs, Utxos: utxos, Height: cs.TipHeight,
		TxOuts: core.TxOuts, TotalAmount: core.TotalAmount, MuHash: core.MuHash}
	var display [2 * chainhash.HashSize]byte
	buf := make([]byte, 0, 128)
	for _, run := range runs {
		hex.Encode(display[:], run.display[:])
		for _, l := range run.lines {
			sum.Satoshis += l.satoshis
			buf = append(buf[:0], display[:]...)
			buf = append(buf, ':')
			buf = strconv.AppendUint(buf, uint64(l.vout), 10)
			buf = append(buf, ':')
			buf = strconv.AppendUint(buf, l.satoshis, 10)
			buf = append(buf, '\n')
			h.Write(buf)
		}
	}
	sum.Digest = hex.EncodeToString(h.Sum(nil))
	return sum, nil
}
