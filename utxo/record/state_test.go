package record

import (
	"errors"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/model"
)

const (
	cur = uint32(200) // current height in the transition table
	ret = uint32(288) // retention
)

var (
	out0 = hn("base/out", 0)
	out2 = hn("base/out", 2)
	spA  = sd("A", 1)
	spB  = sd("B", 0)
)

// baseRecord: master of a mined tx (block 1 at height 100) with outputs
// 0 (unspent), 1 (not stored), 2 (unspent).
func baseRecord() *Record {
	return &Record{
		TxID:         h("base"),
		Utxos:        []Entry{NewUnspentEntry(out0), nil, NewUnspentEntry(out2)},
		RecordUtxos:  2,
		TotalUtxos:   3,
		BlockIDs:     []uint32{1},
		BlockHeights: []uint32{100},
		SubtreeIdxs:  []int{0},
		Version:      1,
		Fee:          500,
		SizeInBytes:  200,
		CreatedAt:    1000,
	}
}

func spendOpts() SpendOptions { return SpendOptions{CurrentHeight: cur, Retention: ret} }

func spend(offset uint32, hash chainhash.Hash, s model.SpendingData) func(*Record) (Signal, error) {
	return func(r *Record) (Signal, error) { return r.Spend(offset, hash, s, spendOpts()) }
}

func spendWith(offset uint32, hash chainhash.Hash, s model.SpendingData, o SpendOptions) func(*Record) (Signal, error) {
	return func(r *Record) (Signal, error) { return r.Spend(offset, hash, s, o) }
}

func unspend(offset uint32, hash chainhash.Hash, o UnspendOptions) func(*Record) (Signal, error) {
	if o.Retention == 0 {
		o.CurrentHeight, o.Retention = cur, ret
	}
	return func(r *Record) (Signal, error) { return r.Unspend(offset, hash, o) }
}

func noSig(f func(*Record) error) func(*Record) (Signal, error) {
	return func(r *Record) (Signal, error) { return 0, f(r) }
}

func noErr(f func(*Record) Signal) func(*Record) (Signal, error) {
	return func(r *Record) (Signal, error) { return f(r), nil }
}

// spentAt marks output offset of r spent by s (fixture helper).
func spentAt(r *Record, offset uint32, hash chainhash.Hash, s model.SpendingData) {
	r.Utxos[offset] = NewSpentEntry(hash, s)
	r.SpentUtxos++
}

type transition struct {
	name     string
	setup    func(*Record)
	op       func(*Record) (Signal, error)
	wantCode model.ErrorCode
	wantSig  Signal
	// want applies the expected change to a copy of the set-up record.
	want func(*Record)
	// check inspects the error further.
	check func(*testing.T, *model.Error)
}

func runTransitions(t *testing.T, cases []transition) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := baseRecord()
			if c.setup != nil {
				c.setup(r)
			}
			if err := r.Validate(); err != nil {
				t.Fatalf("set-up record invalid: %v", err)
			}
			before := r.Clone()
			sig, err := c.op(r)
			if c.wantCode != 0 {
				var e *model.Error
				if !errors.As(err, &e) || e.Code != c.wantCode {
					t.Fatalf("err = %v, want %v", err, c.wantCode)
				}
				if !errors.Is(err, &model.Error{Code: c.wantCode}) {
					t.Fatal("errors.Is does not match the code")
				}
				if sig != 0 {
					t.Fatalf("failed op signalled %v", sig)
				}
				assertSameBytes(t, before, r) // failed ops leave the record untouched
				if c.check != nil {
					c.check(t, e)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if sig != c.wantSig {
				t.Fatalf("signal = %q, want %q", sig, c.wantSig)
			}
			want := before.Clone()
			if c.want != nil {
				c.want(want)
			}
			assertSameBytes(t, want, r)
			if err := r.Validate(); err != nil {
				t.Fatalf("result invalid: %v", err)
			}
			if _, err := Decode(r.Encode()); err != nil {
				t.Fatalf("result does not decode: %v", err)
			}
		})
	}
}

func TestSpendTransitions(t *testing.T) {
	runTransitions(t, []transition{
		{name: "unspent to spent", op: spend(0, out0, spA),
			want: func(r *Record) { spentAt(r, 0, out0, spA) }},
		{name: "last output spent: ALLSPENT and DAHSET", setup: func(r *Record) { spentAt(r, 2, out2, spB) },
			op: spend(0, out0, spA), wantSig: SignalAllSpent | SignalDAHSet,
			want: func(r *Record) { spentAt(r, 0, out0, spA); r.DeleteAtHeight = cur + ret }},
		{name: "last output spent while unmined: ALLSPENT only", setup: func(r *Record) {
			spentAt(r, 2, out2, spB)
			r.BlockIDs, r.BlockHeights, r.SubtreeIdxs, r.UnminedSince = nil, nil, nil, 150
		}, op: spend(0, out0, spA), wantSig: SignalAllSpent,
			want: func(r *Record) { spentAt(r, 0, out0, spA) }},
		{name: "last output spent with retention 0: no DAH", setup: func(r *Record) { spentAt(r, 2, out2, spB) },
			op: spendWith(0, out0, spA, SpendOptions{CurrentHeight: cur}), wantSig: SignalAllSpent,
			want: func(r *Record) { spentAt(r, 0, out0, spA) }},
		{name: "last output spent but child records unspent", setup: func(r *Record) {
			spentAt(r, 2, out2, spB)
			r.TotalExtraRecs = 2
			r.SpentExtraRecs = 1
		}, op: spend(0, out0, spA), wantSig: SignalAllSpent,
			want: func(r *Record) { spentAt(r, 0, out0, spA) }},
		{name: "last output spent while preserved: no DAH", setup: func(r *Record) { spentAt(r, 2, out2, spB); r.PreserveUntil = 900 },
			op: spend(0, out0, spA), wantSig: SignalAllSpent,
			want: func(r *Record) { spentAt(r, 0, out0, spA) }},
		{name: "child record fully spent: ALLSPENT, no DAH", setup: func(r *Record) {
			*r = Record{TxID: r.TxID, Index: 1, FirstVout: 3, Utxos: []Entry{NewUnspentEntry(out0)}, RecordUtxos: 1}
		}, op: spend(0, out0, spA), wantSig: SignalAllSpent,
			want: func(r *Record) { spentAt(r, 0, out0, spA) }},
		{name: "idempotent re-spend", setup: func(r *Record) { spentAt(r, 0, out0, spA) },
			op: spend(0, out0, spA)},
		{name: "idempotent re-spend of last output does not re-signal", setup: func(r *Record) {
			spentAt(r, 0, out0, spA)
			spentAt(r, 2, out2, spB)
			r.DeleteAtHeight = 300
		}, op: spend(0, out0, spA)},
		{name: "spent by another: SPENT with existing spender", setup: func(r *Record) { spentAt(r, 0, out0, spA) },
			op: spend(0, out0, spB), wantCode: model.CodeSpent,
			check: func(t *testing.T, e *model.Error) {
				if e.Spending == nil || *e.Spending != spA || e.TxID != h("base") || e.Vout != 0 {
					t.Fatalf("SPENT error carries %+v", e)
				}
			}},
		{name: "creating: UTXO_LOCKED", setup: func(r *Record) { r.Creating = true }, op: spend(0, out0, spA), wantCode: model.CodeUtxoLocked},
		{name: "creating beats ignore flags", setup: func(r *Record) { r.Creating = true; r.Locked = true },
			op: spendWith(0, out0, spA, SpendOptions{CurrentHeight: cur, IgnoreLocked: true, IgnoreConflicting: true}), wantCode: model.CodeUtxoLocked},
		{name: "conflicting: CONFLICTING", setup: func(r *Record) { r.Conflicting = true; r.DeleteAtHeight = 400 }, op: spend(0, out0, spA), wantCode: model.CodeConflicting},
		{name: "conflicting before locked", setup: func(r *Record) { r.Conflicting = true; r.Locked = true; r.DeleteAtHeight = 400 }, op: spend(0, out0, spA), wantCode: model.CodeConflicting},
		{name: "conflicting ignored", setup: func(r *Record) { r.Conflicting = true; r.DeleteAtHeight = 400 },
			op:   spendWith(0, out0, spA, SpendOptions{CurrentHeight: cur, Retention: ret, IgnoreConflicting: true}),
			want: func(r *Record) { spentAt(r, 0, out0, spA) }},
		{name: "locked: LOCKED", setup: func(r *Record) { r.Locked = true }, op: spend(0, out0, spA), wantCode: model.CodeLocked},
		{name: "locked ignored", setup: func(r *Record) { r.Locked = true },
			op:   spendWith(0, out0, spA, SpendOptions{CurrentHeight: cur, Retention: ret, IgnoreLocked: true}),
			want: func(r *Record) { spentAt(r, 0, out0, spA) }},
		{name: "locked before maturity", setup: func(r *Record) { r.Locked = true; r.IsCoinbase = true; r.SpendingHeight = 1000 }, op: spend(0, out0, spA), wantCode: model.CodeLocked},
		{name: "coinbase immature", setup: func(r *Record) { r.IsCoinbase = true; r.SpendingHeight = cur + 1 }, op: spend(0, out0, spA), wantCode: model.CodeCoinbaseImmature},
		{name: "maturity before output checks", setup: func(r *Record) { r.IsCoinbase = true; r.SpendingHeight = cur + 1 }, op: spend(9, out0, spA), wantCode: model.CodeCoinbaseImmature},
		{name: "coinbase mature at exactly spendingHeight", setup: func(r *Record) { r.IsCoinbase = true; r.SpendingHeight = cur },
			op: spend(0, out0, spA), want: func(r *Record) { spentAt(r, 0, out0, spA) }},
		{name: "offset out of range: UTXO_NOT_FOUND", op: spend(3, out0, spA), wantCode: model.CodeUtxoNotFound},
		{name: "output not stored: UTXO_NOT_FOUND", op: spend(1, out0, spA), wantCode: model.CodeUtxoNotFound},
		{name: "hash mismatch", op: spend(0, out2, spA), wantCode: model.CodeUtxoHashMismatch},
		{name: "frozen: FROZEN", setup: func(r *Record) { r.Utxos[0] = NewFrozenEntry(out0); r.Frozen = true }, op: spend(0, out0, spA), wantCode: model.CodeFrozen},
		{name: "reassigned and held: FROZEN_UNTIL", setup: func(r *Record) { r.UtxoSpendableIn = map[uint32]uint32{0: cur + 1} }, op: spend(0, out0, spA), wantCode: model.CodeFrozenUntil},
		{name: "reassigned and held at exactly the current height: FROZEN_UNTIL", setup: func(r *Record) { r.UtxoSpendableIn = map[uint32]uint32{0: cur} }, op: spend(0, out0, spA), wantCode: model.CodeFrozenUntil},
		{name: "frozen again within its reassignment hold: FROZEN_UNTIL first, as in the reference", setup: func(r *Record) {
			r.UtxoSpendableIn = map[uint32]uint32{0: cur}
			r.Utxos[0] = NewFrozenEntry(out0)
			r.Frozen = true
		}, op: spend(0, out0, spA), wantCode: model.CodeFrozenUntil},
		{name: "reassigned hold over", setup: func(r *Record) { r.UtxoSpendableIn = map[uint32]uint32{0: cur - 1} },
			op: spend(0, out0, spA), want: func(r *Record) { spentAt(r, 0, out0, spA) }},
		{name: "same spender again after it was deleted: INVALID_SPEND", setup: func(r *Record) { spentAt(r, 0, out0, spA); r.AddDeletedChild(spA.TxID) },
			op: spend(0, out0, spA), wantCode: model.CodeInvalidSpend},
		{name: "frozen marker as spending data: INVALID_SPEND", op: spend(0, out0, frozenSpendingData), wantCode: model.CodeInvalidSpend},
		{name: "vout of a child record's error", setup: func(r *Record) {
			*r = Record{TxID: r.TxID, Index: 2, FirstVout: 40000, Utxos: []Entry{NewUnspentEntry(out0), NewSpentEntry(out2, spA)}, RecordUtxos: 2, SpentUtxos: 1}
		}, op: spend(1, out2, spB), wantCode: model.CodeSpent, check: func(t *testing.T, e *model.Error) {
			if e.Vout != 40001 {
				t.Fatalf("vout %d", e.Vout)
			}
		}},
	})
}

func TestUnspendTransitions(t *testing.T) {
	allSpent := func(r *Record) {
		spentAt(r, 0, out0, spA)
		spentAt(r, 2, out2, spB)
		r.DeleteAtHeight = cur + ret
	}
	runTransitions(t, []transition{
		{name: "spent to unspent", setup: func(r *Record) { spentAt(r, 0, out0, spA) }, op: unspend(0, out0, UnspendOptions{}),
			want: func(r *Record) { r.Utxos[0] = NewUnspentEntry(out0); r.SpentUtxos = 0 }},
		{name: "leaving fully spent: NOTALLSPENT and DAHUNSET", setup: allSpent, op: unspend(0, out0, UnspendOptions{}),
			wantSig: SignalNotAllSpent | SignalDAHUnset,
			want:    func(r *Record) { r.Utxos[0] = NewUnspentEntry(out0); r.SpentUtxos = 1; r.DeleteAtHeight = 0 }},
		{name: "unspend of unspent is a no-op", op: unspend(0, out0, UnspendOptions{})},
		{name: "expected spender matches", setup: func(r *Record) { spentAt(r, 0, out0, spA) }, op: unspend(0, out0, UnspendOptions{Expected: &spA}),
			want: func(r *Record) { r.Utxos[0] = NewUnspentEntry(out0); r.SpentUtxos = 0 }},
		{name: "expected spender differs: no-op", setup: func(r *Record) { spentAt(r, 0, out0, spA) }, op: unspend(0, out0, UnspendOptions{Expected: &spB})},
		{name: "flag as locked", setup: allSpent, op: unspend(0, out0, UnspendOptions{FlagAsLocked: true}),
			wantSig: SignalNotAllSpent | SignalDAHUnset,
			want: func(r *Record) {
				r.Utxos[0] = NewUnspentEntry(out0)
				r.SpentUtxos = 1
				r.DeleteAtHeight = 0
				r.Locked = true
			}},
		{name: "frozen: FROZEN", setup: func(r *Record) { r.Utxos[0] = NewFrozenEntry(out0); r.Frozen = true }, op: unspend(0, out0, UnspendOptions{}), wantCode: model.CodeFrozen},
		{name: "not found", op: unspend(1, out0, UnspendOptions{}), wantCode: model.CodeUtxoNotFound},
		{name: "hash mismatch", setup: func(r *Record) { spentAt(r, 0, out0, spA) }, op: unspend(0, out2, UnspendOptions{}), wantCode: model.CodeUtxoHashMismatch},
	})
}

func TestSetMinedTransitions(t *testing.T) {
	unmined := func(r *Record) { r.BlockIDs, r.BlockHeights, r.SubtreeIdxs, r.UnminedSince = nil, nil, nil, 150 }
	mine := func(info model.MinedBlockInfo) func(*Record) (Signal, error) {
		return noErr(func(r *Record) Signal { return r.SetMined(info, cur, ret) })
	}
	runTransitions(t, []transition{
		{name: "created&locked to mined", setup: func(r *Record) { unmined(r); r.Locked = true; r.Creating = true },
			op: mine(model.MinedBlockInfo{BlockID: 5, BlockHeight: 199, SubtreeIdx: 3, OnLongestChain: true}),
			want: func(r *Record) {
				r.Locked, r.Creating, r.UnminedSince = false, false, 0
				r.BlockIDs, r.BlockHeights, r.SubtreeIdxs = []uint32{5}, []uint32{199}, []int{3}
			}},
		{name: "mined off the longest chain stays unmined", setup: unmined,
			op:   mine(model.MinedBlockInfo{BlockID: 5, BlockHeight: 199}),
			want: func(r *Record) { r.BlockIDs, r.BlockHeights, r.SubtreeIdxs = []uint32{5}, []uint32{199}, []int{0} }},
		{name: "same block twice is not duplicated", op: mine(model.MinedBlockInfo{BlockID: 1, BlockHeight: 100, OnLongestChain: true})},
		{name: "second block (fork) appended", op: mine(model.MinedBlockInfo{BlockID: 2, BlockHeight: 100, SubtreeIdx: 7, OnLongestChain: true}),
			want: func(r *Record) {
				r.BlockIDs, r.BlockHeights, r.SubtreeIdxs = []uint32{1, 2}, []uint32{100, 100}, []int{0, 7}
			}},
		{name: "mined fully spent: DAHSET at current height + retention, not the block's", setup: func(r *Record) { unmined(r); spentAt(r, 0, out0, spA); spentAt(r, 2, out2, spB) },
			op: mine(model.MinedBlockInfo{BlockID: 5, BlockHeight: 205, OnLongestChain: true}), wantSig: SignalDAHSet,
			want: func(r *Record) {
				r.UnminedSince = 0
				r.BlockIDs, r.BlockHeights, r.SubtreeIdxs = []uint32{5}, []uint32{205}, []int{0}
				r.DeleteAtHeight = cur + ret
			}},
		{name: "unset mined: back to unmined, DAH cleared", setup: func(r *Record) {
			spentAt(r, 0, out0, spA)
			spentAt(r, 2, out2, spB)
			r.DeleteAtHeight = 400
		}, op: mine(model.MinedBlockInfo{BlockID: 1, BlockHeight: 100, UnsetMined: true}), wantSig: SignalDAHUnset,
			want: func(r *Record) {
				r.BlockIDs, r.BlockHeights, r.SubtreeIdxs = []uint32{}, []uint32{}, []int{}
				r.UnminedSince = cur
				r.DeleteAtHeight = 0
			}},
		{name: "unset one of two blocks keeps the other", setup: func(r *Record) {
			r.BlockIDs, r.BlockHeights, r.SubtreeIdxs = []uint32{1, 2}, []uint32{100, 101}, []int{0, 4}
		}, op: mine(model.MinedBlockInfo{BlockID: 1, UnsetMined: true}),
			want: func(r *Record) { r.BlockIDs, r.BlockHeights, r.SubtreeIdxs = []uint32{2}, []uint32{101}, []int{4} }},
		{name: "unset unknown block is harmless", op: mine(model.MinedBlockInfo{BlockID: 9, UnsetMined: true})},
		{name: "coinbase maturity is Create's, not the block's", setup: func(r *Record) { unmined(r); r.IsCoinbase = true; r.SpendingHeight = 250 },
			op: mine(model.MinedBlockInfo{BlockID: 5, BlockHeight: 180, OnLongestChain: true}),
			want: func(r *Record) {
				r.UnminedSince = 0
				r.BlockIDs, r.BlockHeights, r.SubtreeIdxs = []uint32{5}, []uint32{180}, []int{0}
			}},
		{name: "child record: only lock and creating cleared", setup: func(r *Record) {
			*r = Record{TxID: r.TxID, Index: 1, FirstVout: 3, Utxos: []Entry{NewUnspentEntry(out0)}, RecordUtxos: 1, Locked: true, Creating: true}
		}, op: mine(model.MinedBlockInfo{BlockID: 5, BlockHeight: 180, OnLongestChain: true}),
			want: func(r *Record) { r.Locked, r.Creating = false, false }},
	})
}

func TestLockFreezeReassignTransitions(t *testing.T) {
	frozen0 := func(r *Record) { r.Utxos[0] = NewFrozenEntry(out0); r.Frozen = true }
	newHash := h("new owner")
	runTransitions(t, []transition{
		{name: "unlock", setup: func(r *Record) { r.Locked = true }, op: noErr(func(r *Record) Signal { return r.SetLocked(false) }),
			want: func(r *Record) { r.Locked = false }},
		{name: "lock clears DAH", setup: func(r *Record) { r.DeleteAtHeight = 400 }, op: noErr(func(r *Record) Signal { return r.SetLocked(true) }),
			wantSig: SignalDAHUnset, want: func(r *Record) { r.Locked = true; r.DeleteAtHeight = 0 }},
		{name: "creating cleared", setup: func(r *Record) { r.Creating = true }, op: noErr(func(r *Record) Signal { r.SetCreating(false); return 0 }),
			want: func(r *Record) { r.Creating = false }},
		{name: "freeze", op: noSig(func(r *Record) error { return r.Freeze(0, out0) }), want: frozen0},
		{name: "freeze twice: ALREADY_FROZEN", setup: frozen0, op: noSig(func(r *Record) error { return r.Freeze(0, out0) }), wantCode: model.CodeAlreadyFrozen},
		{name: "freeze spent: SPENT", setup: func(r *Record) { spentAt(r, 0, out0, spA) }, op: noSig(func(r *Record) error { return r.Freeze(0, out0) }), wantCode: model.CodeSpent,
			check: func(t *testing.T, e *model.Error) {
				if e.Spending == nil || *e.Spending != spA {
					t.Fatal("no spender")
				}
			}},
		{name: "freeze missing", op: noSig(func(r *Record) error { return r.Freeze(1, out0) }), wantCode: model.CodeUtxoNotFound},
		{name: "freeze wrong hash", op: noSig(func(r *Record) error { return r.Freeze(0, out2) }), wantCode: model.CodeUtxoHashMismatch},
		{name: "unfreeze", setup: frozen0, op: noSig(func(r *Record) error { return r.UnFreeze(0, out0) }),
			want: func(r *Record) { r.Utxos[0] = NewUnspentEntry(out0); r.Frozen = false }},
		{name: "unfreeze one of two keeps Frozen", setup: func(r *Record) { frozen0(r); r.Utxos[2] = NewFrozenEntry(out2) },
			op:   noSig(func(r *Record) error { return r.UnFreeze(0, out0) }),
			want: func(r *Record) { r.Utxos[0] = NewUnspentEntry(out0) }},
		{name: "unfreeze unfrozen: UTXO_NOT_FROZEN", op: noSig(func(r *Record) error { return r.UnFreeze(0, out0) }), wantCode: model.CodeUtxoNotFrozen},
		{name: "unfreeze spent: UTXO_NOT_FROZEN", setup: func(r *Record) { spentAt(r, 0, out0, spA) }, op: noSig(func(r *Record) error { return r.UnFreeze(0, out0) }), wantCode: model.CodeUtxoNotFrozen},
		{name: "reassign frozen", setup: frozen0,
			op: noSig(func(r *Record) error { return r.Reassign(0, out0, newHash, 150, reassignmentDelay) }),
			want: func(r *Record) {
				r.Utxos[0] = NewUnspentEntry(newHash)
				r.Frozen = false
				r.UtxoSpendableIn = map[uint32]uint32{0: 1150}
				r.Reassignments = []Reassignment{{Offset: 0, UtxoHash: out0, NewUtxoHash: newHash, BlockHeight: 150}}
			}},
		{name: "reassign unfrozen: UTXO_NOT_FROZEN", op: noSig(func(r *Record) error { return r.Reassign(0, out0, newHash, 150, 1000) }), wantCode: model.CodeUtxoNotFrozen},
		{name: "reassign spent: UTXO_NOT_FROZEN", setup: func(r *Record) { spentAt(r, 0, out0, spA) },
			op: noSig(func(r *Record) error { return r.Reassign(0, out0, newHash, 150, 1000) }), wantCode: model.CodeUtxoNotFrozen},
		{name: "reassign wrong hash", setup: frozen0, op: noSig(func(r *Record) error { return r.Reassign(0, out2, newHash, 150, 1000) }), wantCode: model.CodeUtxoHashMismatch},
		{name: "reassigned record is never scheduled for deletion", setup: func(r *Record) {
			r.Utxos[0] = NewUnspentEntry(newHash)
			r.UtxoSpendableIn = map[uint32]uint32{0: 150}
			r.Reassignments = []Reassignment{{Offset: 0, UtxoHash: out0, NewUtxoHash: newHash, BlockHeight: 100}}
			spentAt(r, 2, out2, spB)
		}, op: spend(0, newHash, spA), want: func(r *Record) { spentAt(r, 0, newHash, spA) }},
	})
}

func TestConflictingPreserveDAHTransitions(t *testing.T) {
	allSpent := func(r *Record) { spentAt(r, 0, out0, spA); spentAt(r, 2, out2, spB) }
	runTransitions(t, []transition{
		{name: "conflicting sets DAH now", op: noErr(func(r *Record) Signal { return r.SetConflicting(true, cur, ret) }),
			wantSig: SignalDAHSet, want: func(r *Record) { r.Conflicting = true; r.DeleteAtHeight = cur + ret }},
		{name: "conflicting keeps an existing DAH", setup: func(r *Record) { r.DeleteAtHeight = 300 },
			op: noErr(func(r *Record) Signal { return r.SetConflicting(true, cur, ret) }), want: func(r *Record) { r.Conflicting = true }},
		{name: "conflicting child record gets a DAH too", setup: func(r *Record) {
			*r = Record{TxID: r.TxID, Index: 1, FirstVout: 3, Utxos: []Entry{NewUnspentEntry(out0)}, RecordUtxos: 1}
		}, op: noErr(func(r *Record) Signal { return r.SetConflicting(true, cur, ret) }),
			wantSig: SignalDAHSet, want: func(r *Record) { r.Conflicting = true; r.DeleteAtHeight = cur + ret }},
		{name: "conflicting with retention 0", op: noErr(func(r *Record) Signal { return r.SetConflicting(true, cur, 0) }),
			want: func(r *Record) { r.Conflicting = true }},
		{name: "unconflicting unspent record clears DAH", setup: func(r *Record) { r.Conflicting = true; r.DeleteAtHeight = 400 },
			op: noErr(func(r *Record) Signal { return r.SetConflicting(false, cur, ret) }), wantSig: SignalDAHUnset,
			want: func(r *Record) { r.Conflicting = false; r.DeleteAtHeight = 0 }},
		{name: "conflicting child added once", op: noErr(func(r *Record) Signal {
			r.AddConflictingChild(h("kid"))
			if r.AddConflictingChild(h("kid")) {
				panic("duplicate accepted")
			}
			return 0
		}), want: func(r *Record) { r.ConflictingChildren = append(r.ConflictingChildren, h("kid")) }},
		{name: "preserve clears DAH", setup: func(r *Record) { allSpent(r); r.DeleteAtHeight = 400 },
			op: noErr(func(r *Record) Signal { return r.Preserve(1640) }), wantSig: SignalPreserve,
			want: func(r *Record) { r.DeleteAtHeight = 0; r.PreserveUntil = 1640 }},
		{name: "expired preserve: DAH rule resumes", setup: func(r *Record) { allSpent(r); r.PreserveUntil = cur },
			op: noErr(func(r *Record) Signal { return r.ExpirePreserve(cur, ret) }), wantSig: SignalDAHSet,
			want: func(r *Record) { r.PreserveUntil = 0; r.DeleteAtHeight = cur + ret }},
		{name: "preserve still in force", setup: func(r *Record) { allSpent(r); r.PreserveUntil = cur + 1 },
			op: noErr(func(r *Record) Signal { return r.ExpirePreserve(cur, ret) })},
		{name: "explicit DAH (children)", op: noErr(func(r *Record) Signal { return r.SetDeleteAtHeight(700) }),
			wantSig: SignalDAHSet, want: func(r *Record) { r.DeleteAtHeight = 700 }},
		{name: "explicit DAH clear", setup: func(r *Record) { r.DeleteAtHeight = 700 }, op: noErr(func(r *Record) Signal { return r.SetDeleteAtHeight(0) }),
			wantSig: SignalDAHUnset, want: func(r *Record) { r.DeleteAtHeight = 0 }},
		{name: "explicit DAH unchanged", setup: func(r *Record) { r.DeleteAtHeight = 700 }, op: noErr(func(r *Record) Signal { return r.SetDeleteAtHeight(700) })},
		{name: "last child spent: master DAHSET", setup: func(r *Record) { allSpent(r); r.TotalExtraRecs = 2; r.SpentExtraRecs = 1 },
			op: func(r *Record) (Signal, error) { return r.IncrementSpentExtraRecs(1, cur, ret) }, wantSig: SignalDAHSet,
			want: func(r *Record) { r.SpentExtraRecs = 2; r.DeleteAtHeight = cur + ret }},
		{name: "child unspent again: master DAHUNSET", setup: func(r *Record) {
			allSpent(r)
			r.TotalExtraRecs, r.SpentExtraRecs, r.DeleteAtHeight = 2, 2, 400
		}, op: func(r *Record) (Signal, error) { return r.IncrementSpentExtraRecs(-1, cur, ret) }, wantSig: SignalDAHUnset,
			want: func(r *Record) { r.SpentExtraRecs = 1; r.DeleteAtHeight = 0 }},
		{name: "spentExtraRecs clamps at 0", setup: func(r *Record) { r.TotalExtraRecs = 2 },
			op: func(r *Record) (Signal, error) { return r.IncrementSpentExtraRecs(-1, cur, ret) }},
		{name: "spentExtraRecs clamps at total", setup: func(r *Record) { r.TotalExtraRecs = 2; r.SpentExtraRecs = 2 },
			op: func(r *Record) (Signal, error) { return r.IncrementSpentExtraRecs(1, cur, ret) }},
		{name: "spentExtraRecs on a single-record tx: INVALID_PARAMETER",
			op: func(r *Record) (Signal, error) { return r.IncrementSpentExtraRecs(1, cur, ret) }, wantCode: model.CodeInvalidParameter},
		{name: "DAH moves later when re-evaluated higher", setup: func(r *Record) { allSpent(r); r.DeleteAtHeight = 300 },
			op: noErr(func(r *Record) Signal {
				return r.SetMined(model.MinedBlockInfo{BlockID: 1, BlockHeight: 100, OnLongestChain: true}, cur, 250)
			}),
			wantSig: SignalDAHSet, want: func(r *Record) { r.DeleteAtHeight = cur + 250 }},
	})
}

func TestSpendMulti(t *testing.T) {
	r := baseRecord()
	sig, itemErrs, err := r.SpendMulti([]SpendItem{
		{Offset: 0, UtxoHash: out0, Spending: spA},
		{Offset: 1, UtxoHash: out0, Spending: spA},
		{Offset: 2, UtxoHash: out2, Spending: spB},
	}, spendOpts())
	if err != nil || itemErrs == nil || itemErrs[0] != nil || itemErrs[2] != nil || !errors.Is(itemErrs[1], model.ErrUtxoNotFound) {
		t.Fatalf("err=%v itemErrs=%v", err, itemErrs)
	}
	if sig != SignalAllSpent|SignalDAHSet || r.SpentUtxos != 2 {
		t.Fatalf("sig=%v spent=%d", sig, r.SpentUtxos)
	}
	r = baseRecord()
	r.Locked = true
	if _, _, err := r.SpendMulti([]SpendItem{{Offset: 0, UtxoHash: out0, Spending: spA}}, spendOpts()); !errors.Is(err, model.ErrLocked) {
		t.Fatalf("record-level error %v", err)
	}
	r = baseRecord()
	if sig, itemErrs, err := r.SpendMulti(nil, spendOpts()); sig != 0 || itemErrs != nil || err != nil {
		t.Fatal("empty batch")
	}
}

func TestTerms(t *testing.T) {
	r := baseRecord()
	r.BlockHeights = []uint32{100}
	if got := r.Terms(); got != (engine.Terms{ProducedAt: 100}) {
		t.Fatalf("%+v", got)
	}
	r.BlockIDs, r.BlockHeights, r.SubtreeIdxs = []uint32{1, 2}, []uint32{100, 120}, []int{0, 0}
	spentAt(r, 0, out0, spA)
	spentAt(r, 2, out2, spB)
	r.DeleteAtHeight, r.PreserveUntil = 5, 6
	if got := r.Terms(); got != (engine.Terms{DeleteAtHeight: 5, PreserveUntil: 6, ProducedAt: 120, Consumed: true}) {
		t.Fatalf("%+v", got)
	}
	u := &Record{TxID: h("u"), UnminedSince: 77, Utxos: []Entry{NewUnspentEntry(out0)}, RecordUtxos: 1}
	if got := u.Terms(); got != (engine.Terms{UnminedSince: 77}) {
		t.Fatalf("%+v", got)
	}
}

func TestErrors(t *testing.T) {
	for c := model.CodeTxNotFound; c <= model.CodeInvalidParameter; c++ {
		if c.String() == "" || c.String()[0] == 'E' {
			t.Errorf("code %d has no name", c)
		}
	}
	if model.ErrorCode(200).String() != "ErrorCode(200)" {
		t.Fatal("unknown code name")
	}
	e := model.NewError(model.CodeSpent, h("t"), 3, "already spent %s", "x")
	e.Spending = &spA
	if !errors.Is(e, model.ErrSpent) || errors.Is(e, model.ErrFrozen) {
		t.Fatal("errors.Is by code")
	}
	if msg := e.Error(); msg == "" || msg[:5] != "SPENT" {
		t.Fatalf("message %q", msg)
	}
	if (Signal(0)).String() != "" || (SignalAllSpent|SignalDAHSet).String() != "ALLSPENT|DAHSET" {
		t.Fatal("signal names")
	}
}
