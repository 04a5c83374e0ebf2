package utxo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/engine"
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
}

// utxoLine is one unspent output of the digest.
type utxoLine struct {
	txid     chainhash.Hash
	display  string
	vout     uint32
	satoshis uint64
}

// Summary walks every record and summarises the unspent outputs of the
// transactions mined on the longest chain (frozen outputs are unspent; the
// outputs of unmined or conflicting transactions are not in the set).
func (db *DB) Summary(ctx context.Context) (Summary, error) {
	cs, err := db.loadChainState(ctx)
	if err != nil {
		return Summary{}, err
	}
	type txOutputs struct {
		master  *record.Record
		unspent []uint32 // vouts, from every record of the tx
	}
	txs := map[chainhash.Hash]*txOutputs{}
	get := func(txid chainhash.Hash) *txOutputs {
		t := txs[txid]
		if t == nil {
			t = &txOutputs{}
			txs[txid] = t
		}
		return t
	}
	err = db.eng.ForEach(ctx, func(k engine.Key, v []byte) error {
		r, err := record.Decode(v)
		if err != nil {
			if isLockRecord(v) {
				return nil
			}
			return fmt.Errorf("record %x: %w", k, err)
		}
		t := get(r.TxID)
		if r.IsMaster() {
			t.master = r
		}
		for offset, e := range r.Utxos {
			if e.Stored() && !e.IsSpent() {
				t.unspent = append(t.unspent, r.FirstVout+uint32(offset))
			}
		}
		return nil
	})
	if err != nil {
		return Summary{}, storageErr("walking the records", err)
	}
	var lines []utxoLine
	for txid, t := range txs {
		m := t.master
		if m == nil || m.Conflicting || m.UnminedSince != 0 || len(m.BlockIDs) == 0 || len(t.unspent) == 0 {
			continue
		}
		tx, err := db.txOf(ctx, m)
		if err != nil {
			return Summary{}, err
		}
		display := txid.String()
		for _, vout := range t.unspent {
			if int(vout) >= len(tx.Msg.TxOut) {
				return Summary{}, fmt.Errorf("record of %s names output %d of %d", txid, vout, len(tx.Msg.TxOut))
			}
			lines = append(lines, utxoLine{txid: txid, display: display, vout: vout, satoshis: uint64(tx.Msg.TxOut[vout].Value)})
		}
	}
	sort.Slice(lines, func(i, j int) bool {
		if lines[i].display != lines[j].display {
			return lines[i].display < lines[j].display
		}
		return lines[i].vout < lines[j].vout
	})
	h := sha256.New()
	sum := Summary{Blocks: cs.Blocks, Txs: cs.Txs, Utxos: uint64(len(lines)), Height: cs.TipHeight}
	for _, l := range lines {
		sum.Satoshis += l.satoshis
		fmt.Fprintf(h, "%s:%d:%d\n", l.display, l.vout, l.satoshis)
	}
	sum.Digest = hex.EncodeToString(h.Sum(nil))
	return sum, nil
}
