package utxo

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/coinstats"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/model"
	"github.com/utxostore/utxostore/utxo/record"
)

// VerifyReport counts what Verify checked.
type VerifyReport struct {
	Records     int `json:"records"`
	Masters     int `json:"masters"`
	LockRecords int `json:"lockRecords"`
	IndexTerms  int `json:"indexTerms"`
}

// Verify checks the store's consistency after a crash or on request: every
// record decodes (and decoding checks that its counters match its entries),
// every child record's master exists and names it, the engine's three
// indexes hold exactly the terms the records carry, and the set's
// statistics in the chain state (SetStats) are those of a walk of the set.
// It returns the first inconsistency found; a store stopped inside a block
// is a *PartialBlockError.
func (db *DB) Verify(ctx context.Context) (VerifyReport, error) {
	var rep VerifyReport
	tip, hasTip, err := db.Tip(ctx)
	if err != nil {
		return rep, err
	}
	var partial *PartialBlockError
	termsOf := map[engine.Key]engine.Terms{}
	children := map[chainhash.Hash]uint32{} // txid → highest child index seen
	masters := map[chainhash.Hash]uint32{}  // txid → TotalExtraRecs
	err = db.eng.ForEach(ctx, func(k engine.Key, v []byte) error {
		if isLockRecord(v) {
			if _, err := decodeLockRecord(v); err != nil {
				return fmt.Errorf("lock record %x does not decode: %w", k, err)
			}
			rep.LockRecords++
			return nil
		}
		r, err := record.Decode(v)
		if err != nil {
			return fmt.Errorf("record %x does not decode: %w", k, err)
		}
		if want := engine.Key(record.RecordKey(r.TxID, r.Index)); want != k {
			return fmt.Errorf("record %x names transaction %s index %d, whose key is %x", k, r.TxID, r.Index, want)
		}
		rep.Records++
		if r.IsMaster() {
			rep.Masters++
			masters[r.TxID] = r.TotalExtraRecs
			if partial == nil && hasTip && len(r.BlockHeights) > 0 {
				if lowest := slices.Min(r.BlockHeights); lowest > tip.Height {
					partial = &PartialBlockError{Tip: tip.Height, TxID: r.TxID, Height: lowest}
				}
			}
		} else if r.Index > children[r.TxID] {
			children[r.TxID] = r.Index
		}
		termsOf[k] = r.Terms()
		return nil
	})
	if err != nil {
		return rep, err
	}
	if partial != nil {
		return rep, partial
	}
	for txid, highest := range children {
		total, ok := masters[txid]
		if ok && highest > total {
			return rep, fmt.Errorf("transaction %s has child record %d but its master counts %d", txid, highest, total)
		}
	}
	for _, idx := range engine.Indexes {
		indexed := map[engine.Key]uint32{}
		err := db.eng.Scan(ctx, idx, 1, ^uint32(0), func(k engine.Key, term uint32) error {
			indexed[k] = term
			return nil
		})
		if err != nil {
			return rep, fmt.Errorf("scanning %v: %w", idx, err)
		}
		for k, t := range termsOf {
			want := idx.Term(t)
			if got, ok := indexed[k]; want != 0 && (!ok || got != want) {
				return rep, fmt.Errorf("index %v has %d for record %x, whose term is %d", idx, got, k, want)
			}
		}
		for k, got := range indexed {
			t, ok := termsOf[k]
			if !ok || idx.Term(t) != got {
				return rep, fmt.Errorf("index %v lists %x at %d, but no record carries that term", idx, k, got)
			}
			rep.IndexTerms++
		}
	}
	return rep, db.verifySetStats(ctx)
}

// verifySetStats walks the UTXO set and checks its statistics against those
// the chain state keeps block by block (SetStats). When they differ, it
// looks for outputs spent by transactions the store does not hold, which
// the walk leaves out: if counting them unspent explains the difference,
// it returns them as a *DanglingSpendsError.
func (db *DB) verifySetStats(ctx context.Context) error {
	unmined, err := db.unminedSpenders(ctx)
	if err != nil {
		return err
	}
	walk := func(offChain map[chainhash.Hash]bool) (coinstats.Summary, error) {
		var walked coinstats.Stats
		err := db.forEachCoin(ctx, offChain, func(c *coinstats.Coin) error {
			walked.Add(c)
			return nil
		})
		return walked.Finalize(), err
	}
	got, err := walk(unmined)
	if err != nil {
		return err
	}
	kept, err := db.SetStats(ctx)
	if err != nil || got == kept {
		return err
	}
	mismatch := fmt.Errorf("the set's statistics the chain state keeps (txouts %d, total_amount %d, muhash %s) are not those of a walk of the set (txouts %d, total_amount %d, muhash %s)",
		kept.TxOuts, kept.TotalAmount, kept.MuHash, got.TxOuts, got.TotalAmount, got.MuHash)
	dangling, err := db.danglingSpends(ctx, unmined)
	if err != nil || len(dangling) == 0 {
		return errors.Join(mismatch, err)
	}
	offChain := maps.Clone(unmined)
	for _, d := range dangling {
		offChain[d.Spender.TxID] = true
	}
	if got, err = walk(offChain); err != nil || got != kept {
		return errors.Join(mismatch, err)
	}
	return &DanglingSpendsError{Spends: dangling}
}

// DanglingSpend is an output of the chain's set spent by a transaction
// the store does not hold.
type DanglingSpend struct {
	Output  wire.OutPoint
	Spender model.SpendingData
}

// DanglingSpendsError is Verify's finding in a store whose set has outputs
// spent by transactions it does not hold: a Spend whose transaction was
// never created (a validator stopped between Spend and Create), or whose
// undo a crash cut short. The chain state's statistics count those outputs
// unspent, as Bitcoin Core does; a walk of the set (ForEachCoin: snapshot
// dump, backup) leaves them out, and so does not match. Unspend naming
// them frees them; a block spending them takes them.
type DanglingSpendsError struct {
	Spends []DanglingSpend
}

func (e *DanglingSpendsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d outputs of the set are spent by transactions the store does not hold (a Spend whose transaction was never created, or whose undo a crash cut short):", len(e.Spends))
	for i, d := range e.Spends {
		if i == 5 {
			fmt.Fprintf(&b, " and %d more", len(e.Spends)-i)
			break
		}
		fmt.Fprintf(&b, " %s by %s:%d", d.Output, d.Spender.TxID, d.Spender.Vin)
	}
	b.WriteString(". The set's statistics count them unspent, as Bitcoin Core does, but a walk of the set (snapshot dump, backup) leaves them out and is refused: Unspend naming them frees them, and a block spending them takes them")
	return b.String()
}

// danglingSpends finds the outputs of the set spent by transactions the
// store does not hold. A spender the walk cannot place (not unmined, not
// among the record's deleted children) is looked for afterwards, as the
// walk may not read; only a store that fails verifySetStats pays for it.
func (db *DB) danglingSpends(ctx context.Context, unmined map[chainhash.Hash]bool) ([]DanglingSpend, error) {
	spentBy := map[chainhash.Hash][]DanglingSpend{}
	err := db.walkSet(ctx, func(r *record.Record, _ *setTx) error {
		for offset, e := range r.Utxos {
			sd, spent := e.SpendingData()
			if !spent || unmined[sd.TxID] || slices.Contains(r.DeletedChildren, sd.TxID) {
				continue
			}
			out := wire.OutPoint{Hash: r.TxID, Index: r.FirstVout + uint32(offset)}
			spentBy[sd.TxID] = append(spentBy[sd.TxID], DanglingSpend{Output: out, Spender: sd})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	spenders := slices.Collect(maps.Keys(spentBy))
	var dangling []DanglingSpend
	for batch := range slices.Chunk(spenders, 4096) {
		keys := make([]engine.Key, len(batch))
		for i, txid := range batch {
			keys[i] = engine.Key(record.MasterKey(txid))
		}
		values, err := db.eng.Get(ctx, keys)
		if err != nil {
			return nil, storageErr("reading the spenders", err)
		}
		for i, v := range values {
			if v == nil {
				dangling = append(dangling, spentBy[batch[i]]...)
			}
		}
	}
	slices.SortFunc(dangling, func(a, b DanglingSpend) int {
		if c := bytes.Compare(a.Output.Hash[:], b.Output.Hash[:]); c != 0 {
			return c
		}
		return cmp.Compare(a.Output.Index, b.Output.Index)
	})
	return dangling, nil
}

// PartialBlockError is Verify's finding in a store stopped inside a block:
// a transaction mined above the tip. The block path connects a block's
// transactions before it moves the tip (ConnectBlock), so a crash between
// the two leaves that block's first writes, which connecting the block
// again completes. Until then the set the records hold is not the tip's.
type PartialBlockError struct {
	Tip    uint32         // the store's tip
	TxID   chainhash.Hash // the first transaction found above it
	Height uint32         // the height it is mined at
}

func (e *PartialBlockError) Error() string {
	return fmt.Sprintf("the store holds transaction %s mined at height %d, above its tip at %d: it was stopped inside block %d; "+
		"connect that block again (import the same files, sync, or start the daemon, whose client sends it) and verify then",
		e.TxID, e.Height, e.Tip, e.Height)
}
