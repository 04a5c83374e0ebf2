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
// is a *PartialBlockError, outputs spent by transactions never created a
// *DanglingSpendsError, and outputs spent by transactions of the chain
// gone unlisted an *UnlistedChainSpendsError.
func (db *DB) Verify(ctx context.Context) (VerifyReport, error) {
	var rep VerifyReport
	tip, hasTip, err := db.Tip(ctx)
	if err != nil {
		return rep, err
	}
	var partial *PartialBlockError
	// termsOf holds the records with a term: most records have none (a
	// mined transaction, neither spent in full nor preserved), and an
	// index listing one of those fails as one listing no record does.
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
		if t := r.Terms(); t != (engine.Terms{}) {
			termsOf[k] = t
		}
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
	return rep, db.verifySetStats(ctx, masters)
}

// verifySetStats walks the UTXO set and checks its statistics against those
// the chain state keeps block by block (SetStats). held lists the
// transactions the store holds (Verify's walk of the records, so the check
// is sound on a store that nothing writes to meanwhile).
//
// An output spent by a transaction the store does not hold, and that its
// record does not list among its deleted children, is left out by the
// walk. The statistics tell what it is. Counted unspent, it is a Spend whose
// transaction was never created, or whose undo a crash cut short
// (*DanglingSpendsError). Counted spent, it is a spend of the chain whose
// transaction has gone without being listed (*UnlistedChainSpendsError).
func (db *DB) verifySetStats(ctx context.Context, held map[chainhash.Hash]uint32) error {
	unmined, err := db.unminedSpenders(ctx)
	if err != nil {
		return err
	}
	var absent []DanglingSpend // spent by a transaction neither held nor listed
	var walked coinstats.Stats
	err = db.forEachCoin(ctx, func(r *record.Record, c *coinstats.Coin, sd model.SpendingData) bool {
		if _, ok := held[sd.TxID]; !ok && c.InSet() && !slices.Contains(r.DeletedChildren, sd.TxID) {
			absent = append(absent, DanglingSpend{Output: wire.OutPoint{Hash: r.TxID, Index: c.Vout}, Spender: sd})
		}
		return unmined[sd.TxID]
	}, func(c *coinstats.Coin) error {
		walked.Add(c)
		return nil
	})
	if err != nil {
		return err
	}
	kept, err := db.SetStats(ctx)
	if err != nil {
		return err
	}
	got := walked.Finalize()
	slices.SortFunc(absent, func(a, b DanglingSpend) int {
		if c := bytes.Compare(a.Output.Hash[:], b.Output.Hash[:]); c != 0 {
			return c
		}
		return cmp.Compare(a.Output.Index, b.Output.Index)
	})
	switch {
	case got == kept && len(absent) == 0:
		return nil
	case got == kept:
		return &UnlistedChainSpendsError{Spends: absent}
	}
	mismatch := fmt.Errorf("the set's statistics the chain state keeps (txouts %d, total_amount %d, muhash %s) are not those of a walk of the set (txouts %d, total_amount %d, muhash %s)",
		kept.TxOuts, kept.TotalAmount, kept.MuHash, got.TxOuts, got.TotalAmount, got.MuHash)
	if len(absent) == 0 {
		return mismatch
	}
	offChain := maps.Clone(unmined)
	for _, d := range absent {
		offChain[d.Spender.TxID] = true
	}
	var unspent coinstats.Stats
	err = db.forEachCoin(ctx, func(_ *record.Record, _ *coinstats.Coin, sd model.SpendingData) bool { return offChain[sd.TxID] }, func(c *coinstats.Coin) error {
		unspent.Add(c)
		return nil
	})
	if err != nil || unspent.Finalize() != kept {
		return errors.Join(mismatch, err)
	}
	return &DanglingSpendsError{Spends: absent}
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
	return listSpends(len(e.Spends), "outputs of the set are spent by transactions the store does not hold (a Spend whose transaction was never created, or whose undo a crash cut short):", e.Spends) +
		". The set's statistics count them unspent, as Bitcoin Core does, but a walk of the set (snapshot dump, backup) leaves them out and is refused: Unspend naming them frees them, and a block spending them takes them"
}

// UnlistedChainSpendsError is Verify's finding in a store whose set has
// outputs spent by transactions of the chain that it no longer holds and
// that the outputs' records do not list among their deleted children, as
// Prune and Delete list every transaction of the chain they remove. The
// set's statistics count the outputs spent, as the chain does. But the
// store takes such a spender for a transaction never created: a block
// spending one of those outputs again would connect, a double spend, and
// Unspend naming one would free it. No crash of the store leaves this
// state; a lost write or a fault of the store does.
type UnlistedChainSpendsError struct {
	Spends []DanglingSpend
}

func (e *UnlistedChainSpendsError) Error() string {
	return listSpends(len(e.Spends), "outputs of the set are spent by transactions of the chain that the store no longer holds and does not list among their parents' deleted children:", e.Spends) +
		". The set's statistics count them spent, as the chain does, but the store would take a block spending one of them again, a double spend, or an Unspend naming one: restore the store from a backup taken before the damage, or rebuild it"
}

// listSpends is n and what, then the first few of spends.
func listSpends(n int, what string, spends []DanglingSpend) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", n, what)
	for i, d := range spends {
		if i == 5 {
			fmt.Fprintf(&b, " and %d more", len(spends)-i)
			break
		}
		fmt.Fprintf(&b, " %s by %s:%d", d.Output, d.Spender.TxID, d.Spender.Vin)
	}
	return b.String()
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
