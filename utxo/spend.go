package utxo

import (
	"context"
	"errors"
	"slices"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/model"
	"github.com/utxostore/utxostore/utxo/record"
)

// checkSpender refuses, as INVALID_SPEND, a transaction that is no spend:
// one without inputs, or one spending an output twice. Spend runs it before
// anything is read; transactions already stored are not checked again.
func checkSpender(tx *chain.Tx) error {
	if len(tx.Msg.TxIn) == 0 {
		return model.NewError(model.CodeInvalidSpend, tx.ID, 0, "transaction has no inputs")
	}
	if first, second, found := chain.DuplicateInput(tx.Msg); found {
		return model.NewError(model.CodeInvalidSpend, tx.ID, 0,
			"inputs %d and %d both spend %s", first, second, tx.Msg.TxIn[second].PreviousOutPoint)
	}
	return nil
}

// spendsOf lists the outputs tx's inputs consume. previous, when given, holds
// the output each input claims to spend, from which the claimed UTXO hash is
// computed.
func spendsOf(tx *chain.Tx, previous []*wire.TxOut) ([]*Spend, error) {
	if tx.IsCoinbase() {
		return nil, nil
	}
	if previous != nil && len(previous) != len(tx.Msg.TxIn) {
		return nil, model.NewError(model.CodeInvalidParameter, tx.ID, 0,
			"%d previous outputs given for %d inputs", len(previous), len(tx.Msg.TxIn))
	}
	// One allocation for the spends and one for their spending data,
	// rather than two per input.
	spends := make([]*Spend, len(tx.Msg.TxIn))
	slab := make([]Spend, len(tx.Msg.TxIn))
	data := make([]model.SpendingData, len(tx.Msg.TxIn))
	for vin, in := range tx.Msg.TxIn {
		data[vin] = model.SpendingData{TxID: tx.ID, Vin: uint32(vin)}
		sp := &slab[vin]
		*sp = Spend{
			TxID:         in.PreviousOutPoint.Hash,
			Vout:         in.PreviousOutPoint.Index,
			SpendingData: &data[vin],
		}
		if previous != nil && previous[vin] != nil {
			out := previous[vin]
			h := chainhash.Hash(chain.UTXOHash(sp.TxID, sp.Vout, out.PkScript, uint64(out.Value)))
			sp.UTXOHash = &h
		}
		spends[vin] = sp
	}
	return spends, nil
}

// Spend implements Store. A spender whose output values no chain accepts
// (chain.CheckOutputValues) is refused with INVALID_PARAMETER, naming the
// output, before anything is read.
//
// An output whose transaction is not stored is refused with TX_NOT_FOUND,
// even when tx itself is already stored. That is the SQL reference store's
// answer (sql.go); the Aerospike store (aerospike/spend.go) instead forgives
// it when tx is stored, reasoning that tx was validated before its parent
// was pruned. Here a stored transaction proves no such thing: Create does
// not require a prior Spend (ConnectBlock creates a block's transactions
// before spending their inputs, and callers may store a transaction before
// validating it), so forgiving would accept spends of outputs that never
// existed.
func (db *DB) Spend(ctx context.Context, tx *chain.Tx, opts ...SpendOption) ([]*Spend, error) {
	o := NewSpendOptions(opts...)
	if o.BlockHeight == 0 {
		o.BlockHeight = db.height.Load() + 1
	}
	if err := checkSpender(tx); err != nil {
		return nil, err
	}
	if err := checkValues(tx); err != nil {
		return nil, err
	}
	spends, err := spendsOf(tx, o.PreviousOutputs)
	if err != nil {
		return nil, err
	}
	return spends, db.spendAll(ctx, spends, o)
}

// spendAll spends every output or none, for the caller: when any spend is
// refused, the spends this call applied are undone and every Spend carries
// its outcome. Spends of outputs held by the same record are applied in one
// read-modify-write of that record, so they are atomic; across records the
// undo is a second step. A crash (or a failed engine write) between the two
// leaves the applied spends in place, naming a transaction whose Spend
// failed. The same Spend sent again settles it: its spends are idempotent,
// the refusal repeats and the undo runs; Unspend naming it frees them too.
//
// Each record is inspected, not decoded (record.View), and one that the
// spends leave as it is (a block spending what its transactions spent when
// they were submitted) is not written.
func (db *DB) spendAll(ctx context.Context, spends []*Spend, o SpendOptions) error {
	ropts := record.SpendOptions{
		CurrentHeight:     o.BlockHeight,
		Retention:         db.opts.BlockHeightRetention,
		IgnoreConflicting: o.IgnoreConflicting,
		IgnoreLocked:      o.IgnoreLocked,
	}
	groups := db.groupByRecord(spends)
	committed, err := db.committedMasters(ctx, groups)
	if err != nil {
		return err
	}
	ops := newRecordOps(len(groups))
	for i, g := range groups {
		*ops[i] = recordOp{txid: g.txid, index: g.index, onView: func(v *record.View) (record.Signal, error) {
			if isCommitted, listed := committed[g.txid]; listed && !isCommitted {
				for j := range g.spends {
					g.spends[j].applied, g.spends[j].err = false, nil
				}
				return 0, model.NewError(model.CodeUtxoLocked, g.txid, g.spends[0].Vout, "transaction is still being created (its master record is not committed)")
			}
			items := g.items
			for j := range g.spends {
				gs := &g.spends[j]
				stored := v.Entry(gs.offset)
				items[j] = record.SpendItem{Offset: gs.offset, UtxoHash: claimedHash(stored, gs.UTXOHash), Spending: *gs.SpendingData}
				// Only an unspent output takes a spend; one spent by this
				// very spender already is the idempotent re-spend.
				gs.applied, gs.err = stored.IsUnspent(), nil
			}
			sig, itemErrs, err := v.SpendMulti(items, ropts)
			if err != nil {
				for j := range g.spends {
					g.spends[j].applied = false
				}
				return 0, err
			}
			changed := false
			for j := range g.spends {
				gs := &g.spends[j]
				if itemErrs != nil && itemErrs[j] != nil {
					gs.err, gs.applied = itemErrs[j], false
				}
				changed = changed || gs.applied
			}
			if !changed {
				// Every spend was refused or already there (a block
				// spending what its transactions spent when submitted).
				return sig, errUnchanged
			}
			return sig, nil
		}}
	}
	if err := db.apply(ctx, ops); err != nil {
		return err
	}
	var first error
	var undo []*Spend
	for i, g := range groups {
		for _, gs := range g.spends {
			err := ops[i].err
			if err == nil {
				err = gs.err
			} else if g.index > 0 && committed[g.txid] && errors.Is(err, model.ErrTxNotFound) {
				// The transaction is stored and committed, so all its
				// records exist: a missing one holds no output of it.
				err = model.NewError(model.CodeUtxoNotFound, gs.TxID, gs.Vout, "no such output")
			}
			gs.Err = outputErr(err, gs.Spend)
			if first == nil && gs.Err != nil {
				first = gs.Err
			}
			if ops[i].err == nil && gs.applied {
				undo = append(undo, gs.Spend)
			}
		}
	}
	if err := db.settle(ctx, ops); err != nil {
		return errors.Join(first, err)
	}
	if first == nil {
		return nil
	}
	// All or nothing: undo what this call changed, and only that (an
	// idempotent re-spend changed nothing and must stay).
	if err := db.unspendAll(ctx, undo, false); err != nil {
		return errors.Join(first, err)
	}
	return first
}

// committedMasters reads the master record of each transaction among
// groups with a spend beyond its first record, and says for each whether
// its master is stored and no longer creating; transactions spent in their
// first record alone need no read and are not listed. Phase 2 of a
// multi-record create clears the children before the master, so a child
// without the flag is not yet proof of a committed transaction: the master
// is. The flag only ever goes from set to cleared, so reading it before
// the spend errs on the side of refusing. A committed master also means
// every record of the transaction exists, so a missing one holds no output
// of it.
func (db *DB) committedMasters(ctx context.Context, groups []*recordGroup) (map[chainhash.Hash]bool, error) {
	var txids []chainhash.Hash
	seen := map[chainhash.Hash]bool{}
	for _, g := range groups {
		if g.index > 0 && !seen[g.txid] {
			seen[g.txid] = true
			txids = append(txids, g.txid)
		}
	}
	if len(txids) == 0 {
		return nil, nil
	}
	keys := make([]engine.Key, len(txids))
	for i, txid := range txids {
		keys[i] = engine.Key(record.MasterKey(txid))
	}
	masters, err := db.readRecords(ctx, keys)
	if err != nil {
		return nil, err
	}
	committed := make(map[chainhash.Hash]bool, len(txids))
	for i, m := range masters {
		committed[txids[i]] = m.err == nil && !m.rec.Creating
	}
	return committed, nil
}

// recordGroup is the outputs of one call that live in the same record.
type recordGroup struct {
	txid   chainhash.Hash
	index  uint32
	spends []groupedSpend
	// items is the record operation's scratch, one per spend (SpendMulti
	// takes them as one slice).
	items []record.SpendItem
}

// groupedSpend is one spend of a recordGroup and its outcome, which the
// record operation writes.
type groupedSpend struct {
	*Spend
	offset  uint32 // of the output in the record
	applied bool   // the operation spent the output (it was unspent)
	err     error
}

// groupByRecord groups spends by the record holding their output, keeping
// the first-seen order of records and the order of spends within each.
// The groups' per-spend lists are windows of one allocation each, so a
// block of thousands of spends costs a handful of allocations, not several
// per record.
func (db *DB) groupByRecord(spends []*Spend) []*recordGroup {
	type recordID struct {
		txid  chainhash.Hash
		index uint32
	}
	type placement struct {
		group  int // the spend's group
		offset uint32
	}
	slab := make([]recordGroup, 0, len(spends))
	placed := make([]placement, len(spends))
	sizes := make([]int, 0, len(spends)) // spends per group
	// A transaction's few inputs are grouped by a scan; a block's
	// thousands through a map.
	var byRecord map[recordID]int
	if len(spends) > smallGroupScan {
		byRecord = make(map[recordID]int, len(spends))
	}
	for i, sp := range spends {
		idx, offset := record.Locate(sp.Vout, db.opts.UtxoBatchSize)
		id := recordID{sp.TxID, idx}
		found := -1
		if byRecord != nil {
			if k, ok := byRecord[id]; ok {
				found = k
			}
		} else {
			for k := range slab {
				if slab[k].txid == id.txid && slab[k].index == id.index {
					found = k
					break
				}
			}
		}
		if found < 0 {
			found = len(slab)
			slab = append(slab, recordGroup{txid: sp.TxID, index: idx})
			sizes = append(sizes, 0)
			if byRecord != nil {
				byRecord[id] = found
			}
		}
		placed[i] = placement{found, offset}
		sizes[found]++
	}
	// Each group's window starts where the spends of the groups before it
	// end; the windows are filled in call order.
	n := len(spends)
	grouped, items := make([]groupedSpend, n), make([]record.SpendItem, n)
	groups := make([]*recordGroup, len(slab))
	start := 0
	for k := range slab {
		g := &slab[k]
		end := start + sizes[k]
		g.spends, g.items = grouped[start:start:end], items[start:end:end]
		groups[k] = g
		start = end
	}
	for i, sp := range spends {
		g := &slab[placed[i].group]
		g.spends = append(g.spends, groupedSpend{Spend: sp, offset: placed[i].offset})
	}
	return groups
}

// smallGroupScan is the number of spends up to which groupByRecord finds a
// spend's group by scanning rather than through a map.
const smallGroupScan = 16

// claimedHash is the UTXO hash a spend is checked against: the spender's
// claim, or, when it makes none, the stored entry's hash (nothing to check).
func claimedHash(stored record.Entry, claim *chainhash.Hash) chainhash.Hash {
	if claim != nil {
		return *claim
	}
	return stored.Hash()
}

// entryOf is r.Utxos[offset], nil when offset is beyond r's outputs.
func entryOf(r *record.Record, offset uint32) record.Entry {
	if int(offset) < len(r.Utxos) {
		return r.Utxos[offset]
	}
	return nil
}

// outputErr names the output in a record-level error and fills the
// conflicting transaction of a SPENT error into the Spend.
func outputErr(err error, sp *Spend) error {
	if err == nil {
		return nil
	}
	var e *model.Error
	if !errors.As(err, &e) {
		return err
	}
	if e.Spending != nil {
		id := e.Spending.TxID
		sp.ConflictingTxID = &id
	}
	if e.TxID != sp.TxID || e.Vout != sp.Vout {
		c := *e
		c.TxID, c.Vout = sp.TxID, sp.Vout
		return &c
	}
	return err
}

// Unspend implements Store. An output spent by a transaction mined on the
// longest chain stays spent: the chain spent it, until its block is
// disconnected. Such a spend is refused with SPENT naming the
// spender and its height, and nothing is undone. A validator rolling back
// a transaction it failed to store meets it when a block mined the
// transaction meanwhile; the reference's unspend frees the output all the
// same (teranode.lua), which loses the chain's spend and lets the output be
// spent again. Unspend waits for a block being connected or disconnected,
// so that no block mines a spender between the check and the undo.
func (db *DB) Unspend(ctx context.Context, spends []*Spend, flagAsLocked bool) error {
	db.chainMu.Lock()
	defer db.chainMu.Unlock()
	if err := db.refuseChainSpends(ctx, spends); err != nil {
		return err
	}
	return db.unspendAll(ctx, spends, flagAsLocked)
}

// refuseChainSpends returns SPENT for each of spends whose output a
// transaction mined on the longest chain spends (the one its spending data
// names, or else the output's spender), or spent before it was pruned,
// setting the spend's Err.
func (db *DB) refuseChainSpends(ctx context.Context, spends []*Spend) error {
	spender := make([]*model.SpendingData, len(spends))
	var items []*UnresolvedMetaData
	listed := make(map[chainhash.Hash]bool)
	for i, sp := range spends {
		spender[i] = sp.SpendingData
		if spender[i] == nil {
			held, err := db.GetSpend(ctx, sp)
			if err != nil {
				continue // unspendAll reports it
			}
			spender[i] = held.SpendingData
		}
		if spender[i] != nil && !listed[spender[i].TxID] {
			listed[spender[i].TxID] = true
			items = append(items, &UnresolvedMetaData{TxID: spender[i].TxID})
		}
	}
	if len(items) == 0 {
		return nil
	}
	if err := db.BatchDecorate(ctx, items, FieldOutputs); err != nil { // not the transaction bytes
		return err
	}
	onChain := make(map[chainhash.Hash]uint32) // spender: its height
	missing := make(map[chainhash.Hash]bool)
	for _, it := range items {
		switch {
		case errors.Is(it.Err, model.ErrTxNotFound):
			missing[it.TxID] = true
		case it.Err == nil && it.Meta.UnminedSince == 0 && len(it.Meta.BlockIDs) > 0:
			onChain[it.TxID] = slices.Max(it.Meta.BlockHeights)
		}
	}
	var errs []error
	refuse := func(sp *Spend, spender *model.SpendingData, format string, args ...any) {
		e := model.NewError(model.CodeSpent, sp.TxID, sp.Vout, format, args...)
		e.Spending = spender
		sp.Err = outputErr(e, sp)
		errs = append(errs, sp.Err)
	}
	for i, sp := range spends {
		if spender[i] == nil {
			continue
		}
		if height, ok := onChain[spender[i].TxID]; ok {
			refuse(sp, spender[i], "spent by %s, mined on the longest chain at height %d: the chain's spend stands until its block is disconnected", spender[i].TxID, height)
			continue
		}
		if !missing[spender[i].TxID] {
			continue
		}
		pruned, err := db.prunedSpender(ctx, sp.TxID, sp.Vout, spender[i].TxID)
		if err != nil {
			return err
		}
		if pruned {
			refuse(sp, spender[i], "spent by %s, mined on the longest chain and since pruned: the chain's spend stands", spender[i].TxID)
		}
	}
	return errors.Join(errs...)
}

// unspendAll reverses spends, one read-modify-write per record. A spend
// that names its spending data only undoes that spender's spend: a rollback
// never wipes someone else's.
func (db *DB) unspendAll(ctx context.Context, spends []*Spend, flagAsLocked bool) error {
	uopts := record.UnspendOptions{
		CurrentHeight: db.height.Load(),
		Retention:     db.opts.BlockHeightRetention,
		FlagAsLocked:  flagAsLocked,
	}
	groups := db.groupByRecord(spends)
	ops := newRecordOps(len(groups))
	for i, g := range groups {
		*ops[i] = recordOp{txid: g.txid, index: g.index, op: func(r *record.Record) (record.Signal, error) {
			var sig record.Signal
			for j := range g.spends {
				gs := &g.spends[j]
				o := uopts
				o.Expected = gs.SpendingData
				s, err := r.Unspend(gs.offset, claimedHash(entryOf(r, gs.offset), gs.UTXOHash), o)
				gs.err = err
				sig |= s
			}
			return sig, nil
		}}
	}
	if err := db.apply(ctx, ops); err != nil {
		return err
	}
	var errs []error
	for i, g := range groups {
		for _, gs := range g.spends {
			err := ops[i].err
			if err == nil {
				err = gs.err
			}
			if err != nil {
				gs.Err = outputErr(err, gs.Spend)
				errs = append(errs, gs.Err)
			}
		}
	}
	return errors.Join(append(errs, db.settle(ctx, ops))...)
}

// GetSpend implements Store. The status follows the precedence of the
// reference's aerospike/get.go GetSpend: locked (or still being created),
// then conflicting, then frozen, then held after a reassignment (IMMATURE
// while its spendable-in height is above the store height), then spent.
// An unspent coinbase output that has not matured is IMMATURE too, a check
// the reference's GetSpend does not make. A frozen output reports the
// reference's frozen spending data: 32 × 0xFF and the output's vout as the
// input; a spent one its spender whatever the status.
func (db *DB) GetSpend(ctx context.Context, sp *Spend) (*SpendResponse, error) {
	idx, offset := record.Locate(sp.Vout, db.opts.UtxoBatchSize)
	r, err := db.readRecord(ctx, sp.TxID, idx)
	if errors.Is(err, model.ErrTxNotFound) && idx > 0 {
		// No child record at that index: the output is past the
		// transaction's last one, unless the transaction is missing too.
		if _, masterErr := db.readRecord(ctx, sp.TxID, 0); masterErr != nil {
			return nil, masterErr
		}
		return &SpendResponse{}, model.NewError(model.CodeUtxoNotFound, sp.TxID, sp.Vout, "no such output")
	}
	if err != nil {
		return nil, err
	}
	resp := &SpendResponse{LockTime: r.LockTime}
	if int(offset) >= len(r.Utxos) || !r.Utxos[offset].Stored() {
		return resp, model.NewError(model.CodeUtxoNotFound, sp.TxID, sp.Vout, "no such output")
	}
	e := r.Utxos[offset]
	if sp.UTXOHash != nil && !e.HashEquals(sp.UTXOHash) {
		return resp, model.NewError(model.CodeUtxoHashMismatch, sp.TxID, sp.Vout, "stored UTXO hash differs")
	}
	resp.SpendableIn = r.UtxoSpendableIn[offset]
	if data, ok := e.SpendingData(); ok {
		resp.SpendingData = &data
	}
	if e.IsFrozen() {
		resp.SpendingData = &model.SpendingData{TxID: frozenTxID, Vin: sp.Vout}
	}
	height := db.height.Load()
	switch {
	case r.Locked || r.Creating:
		resp.Status = StatusLocked
	case r.Conflicting:
		resp.Status = StatusConflicting
	case e.IsFrozen():
		resp.Status = StatusFrozen
	case resp.SpendableIn > height:
		resp.Status = StatusImmature
	case e.IsSpent():
		resp.Status = StatusSpent
	case r.SpendingHeight > height+1:
		resp.Status = StatusImmature
	default:
		resp.Status = StatusUnspent
	}
	return resp, nil
}

// frozenTxID is the transaction GetSpend names as the spender of a frozen
// output: 32 × 0xFF, the reference's FrozenBytesTxHash.
var frozenTxID = chainhash.Hash{
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
}

// readRecord reads and decodes one record.
func (db *DB) readRecord(ctx context.Context, txid chainhash.Hash, index uint32) (*record.Record, error) {
	values, err := db.eng.Get(ctx, []engine.Key{engine.Key(record.RecordKey(txid, index))})
	if err != nil {
		return nil, storageErr("reading "+txid.String(), err)
	}
	if values[0] == nil {
		return nil, notFound(txid)
	}
	return record.Decode(values[0])
}
