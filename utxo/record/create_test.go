package record

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/utxostore/utxostore/utxo/model"
)

// Forty-five thousand outputs at the default batch size make three
// records: two full children's worth and five thousand in the last.
func TestBuildPaginatesFortyFiveThousandOutputs(t *testing.T) {
	txid := h("big")
	recs, err := Build(BuildParams{
		TxID: txid, UtxoHashes: utxoHashes("big", 45000), Tx: []byte{1, 2, 3},
		Version: 1, Fee: 9, SizeInBytes: 1234, CurrentHeight: 800, CreatedAt: 42, Locked: true, Creating: true,
		TxInpoints: model.NewTxInpoints([]model.Outpoint{{TxID: h("p"), Vout: 1}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records", len(recs))
	}
	m := recs[0]
	if m.TotalUtxos != 45000 || m.TotalExtraRecs != 2 || m.RecordUtxos != 20000 || m.SpentUtxos != 0 || m.SpentExtraRecs != 0 ||
		!m.External || m.Tx != nil || m.UnminedSince != 800 || m.CreatedAt != 42 || m.TxInpoints.Len() != 1 {
		t.Fatalf("master %+v", m)
	}
	for i, want := range []struct{ firstVout, n, stored uint32 }{{0, 20000, 20000}, {20000, 20000, 20000}, {40000, 5000, 5000}} {
		r := recs[i]
		if r.Index != uint32(i) || r.FirstVout != want.firstVout || uint32(len(r.Utxos)) != want.n || r.RecordUtxos != want.stored ||
			r.TxID != txid || !r.Locked || !r.Creating || r.Fee != 9 || r.Version != 1 || r.SizeInBytes != 1234 {
			t.Fatalf("record %d: %+v", i, r)
		}
		if i > 0 && (r.TotalUtxos != 0 || r.TotalExtraRecs != 0 || r.UnminedSince != 0 || r.CreatedAt != 0 || !r.TxInpoints.IsEmpty() || r.External) {
			t.Fatalf("child %d carries master metadata", i)
		}
		if err := r.Validate(); err != nil {
			t.Fatal(err)
		}
		// vout 20000*i+7 is where KeyForOutput says it is.
		vout := want.firstVout + 7
		if idx, off := Locate(vout, 0); idx != r.Index || r.Utxos[off].Hash() != *utxoHashes("big", 45000)[vout] {
			t.Fatalf("vout %d not at record %d offset %d", vout, idx, off)
		}
		mustDecode(t, r.Encode())
	}
}

func TestBuild(t *testing.T) {
	txid := h("tx")
	base := func() BuildParams {
		return BuildParams{TxID: txid, UtxoHashes: utxoHashes("tx", 3, 1), Tx: []byte{9}, CurrentHeight: 500, Retention: ret, CreatedAt: 7}
	}
	t.Run("unmined single record", func(t *testing.T) {
		recs, err := Build(base())
		if err != nil || len(recs) != 1 {
			t.Fatal(err)
		}
		r := recs[0]
		if r.UnminedSince != 500 || r.RecordUtxos != 2 || r.TotalUtxos != 3 || r.Utxos[1] != nil || string(r.Tx) != "\x09" || r.External ||
			r.SpendingHeight != 0 || r.DeleteAtHeight != 0 || r.TotalExtraRecs != 0 {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("unmined at height 0 is unmined since 1", func(t *testing.T) {
		p := base()
		p.CurrentHeight = 0
		recs, _ := Build(p)
		if recs[0].UnminedSince != 1 {
			t.Fatalf("unmined since %d: 0 reads as mined", recs[0].UnminedSince)
		}
	})
	t.Run("external", func(t *testing.T) {
		p := base()
		p.External = true
		recs, _ := Build(p)
		if !recs[0].External || recs[0].Tx != nil {
			t.Fatal("external keeps tx bytes")
		}
	})
	t.Run("mined coinbase matures from the create height", func(t *testing.T) {
		p := base()
		p.IsCoinbase = true
		p.MinedBlocks = []model.MinedBlockInfo{{BlockID: 3, BlockHeight: 450, SubtreeIdx: 0, OnLongestChain: true}, {BlockID: 3, BlockHeight: 450}}
		r, _ := Build(p)
		if r[0].SpendingHeight != 600 || r[0].UnminedSince != 0 || len(r[0].BlockIDs) != 1 || r[0].BlockHeights[0] != 450 {
			t.Fatalf("%+v", r[0])
		}
	})
	t.Run("unmined coinbase", func(t *testing.T) {
		p := base()
		p.IsCoinbase = true
		r, _ := Build(p)
		if r[0].SpendingHeight != 600 {
			t.Fatalf("spendingHeight %d", r[0].SpendingHeight)
		}
	})
	t.Run("conflicting", func(t *testing.T) {
		p := base()
		p.Conflicting = true
		r, _ := Build(p)
		if !r[0].Conflicting || r[0].DeleteAtHeight != 500+ret {
			t.Fatalf("%+v", r[0])
		}
	})
	t.Run("frozen", func(t *testing.T) {
		p := base()
		p.Frozen = true
		r, _ := Build(p)
		if !r[0].Frozen || !r[0].Utxos[0].IsFrozen() || !r[0].Utxos[2].IsFrozen() || r[0].Utxos[1] != nil || r[0].SpentUtxos != 0 {
			t.Fatalf("%+v", r[0])
		}
		if _, err := r[0].Spend(0, r[0].Utxos[0].Hash(), spA, SpendOptions{CurrentHeight: 600}); !errors.Is(err, model.ErrFrozen) {
			t.Fatal(err)
		}
	})
	t.Run("mined with nothing spendable is scheduled", func(t *testing.T) {
		p := base()
		p.UtxoHashes = utxoHashes("tx", 2, 0, 1)
		p.MinedBlocks = []model.MinedBlockInfo{{BlockID: 1, BlockHeight: 499, OnLongestChain: true}}
		r, _ := Build(p)
		if r[0].DeleteAtHeight != 500+ret {
			t.Fatalf("dah %d", r[0].DeleteAtHeight)
		}
	})
	t.Run("custom batch size and empty child", func(t *testing.T) {
		p := base()
		p.UtxoHashes = utxoHashes("tx", 5, 2, 3)
		p.BatchSize = 2
		r, err := Build(p)
		if err != nil || len(r) != 3 {
			t.Fatal(err)
		}
		if r[1].RecordUtxos != 0 || r[0].SpentExtraRecs != 1 || r[0].TotalExtraRecs != 2 || r[2].FirstVout != 4 || !r[0].External {
			t.Fatalf("%+v / %+v", r[0], r[1])
		}
	})
	t.Run("no outputs", func(t *testing.T) {
		p := base()
		p.UtxoHashes = nil
		if _, err := Build(p); !errors.Is(err, model.ErrInvalidParameter) {
			t.Fatal(err)
		}
	})
	t.Run("bad inpoints", func(t *testing.T) {
		p := base()
		p.TxInpoints = model.TxInpoints{ParentTxHashes: nil, Idxs: [][]uint32{{1}}}
		if _, err := Build(p); !errors.Is(err, model.ErrInvalidParameter) {
			t.Fatal(err)
		}
	})
}

// TestLifecycle walks one transaction through its lifecycle: created and
// locked, unlocked and unmined, mined, spent, unspent, frozen, reassigned,
// conflicting and scheduled for deletion.
func TestLifecycle(t *testing.T) {
	recs, _ := Build(BuildParams{TxID: h("life"), UtxoHashes: utxoHashes("life", 2), Tx: []byte{1}, CurrentHeight: 100, Retention: 10, Locked: true})
	r := recs[0]
	o0, o1 := *utxoHashes("life", 2)[0], *utxoHashes("life", 2)[1]
	step := func(name string, sig Signal, err error, want Signal) {
		t.Helper()
		if err != nil || sig != want {
			t.Fatalf("%s: sig=%v err=%v want %v", name, sig, err, want)
		}
		r = mustDecode(t, r.Encode()) // every step goes through the codec, as in a store
	}
	_, err := r.Spend(0, o0, spA, SpendOptions{CurrentHeight: 101, Retention: 10})
	if !errors.Is(err, model.ErrLocked) {
		t.Fatal(err)
	}
	step("unlock", r.SetLocked(false), nil, 0)
	sig, err := r.Spend(0, o0, spA, SpendOptions{CurrentHeight: 101, Retention: 10})
	step("spend 0", sig, err, 0)
	sig, err = r.Spend(1, o1, spB, SpendOptions{CurrentHeight: 101, Retention: 10})
	step("spend 1 unmined", sig, err, SignalAllSpent)
	step("mine", r.SetMined(model.MinedBlockInfo{BlockID: 1, BlockHeight: 102, OnLongestChain: true}, 102, 10), nil, SignalDAHSet)
	if r.DeleteAtHeight != 112 || r.Terms().ProducedAt != 102 || !r.Terms().Consumed {
		t.Fatalf("%+v", r.Terms())
	}
	step("reorg out", r.SetMined(model.MinedBlockInfo{BlockID: 1, BlockHeight: 102, UnsetMined: true}, 103, 10), nil, SignalDAHUnset)
	if r.UnminedSince != 103 {
		t.Fatal(r.UnminedSince)
	}
	sig, err = r.Unspend(1, o1, UnspendOptions{CurrentHeight: 103, Retention: 10})
	step("unspend", sig, err, SignalNotAllSpent)
}

// A transaction built mined in a block is as set-mined in that block would
// leave it, at the same height, whatever the block's spends did to it in
// between (a coinbase's outputs cannot be spent in its block):
// ConnectBlock relies on it to skip set-mined for the transactions it
// creates.
func TestBuiltMinedIsSetMined(t *testing.T) {
	info := model.MinedBlockInfo{BlockID: 12, BlockHeight: cur, SubtreeIdx: 0, OnLongestChain: true}
	shapes := map[string]BuildParams{
		"plain":         {TxID: h("plain"), UtxoHashes: utxoHashes("plain", 3)},
		"coinbase":      {TxID: h("cb"), UtxoHashes: utxoHashes("cb", 1), IsCoinbase: true},
		"no utxo":       {TxID: h("none"), UtxoHashes: utxoHashes("none", 2, 0, 1)},
		"with tx bytes": {TxID: h("txb"), UtxoHashes: utxoHashes("txb", 2), Tx: []byte{1, 2, 3}},
	}
	for name, p := range shapes {
		for _, spendAll := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s spent=%v", name, spendAll), func(t *testing.T) {
				p.CurrentHeight, p.Retention, p.MinedBlocks = cur, ret, []model.MinedBlockInfo{info}
				recs, err := Build(p)
				if err != nil {
					t.Fatal(err)
				}
				r := recs[0]
				if spendAll && !p.IsCoinbase {
					for off, e := range r.Utxos {
						if e.Stored() {
							if _, err := r.Spend(uint32(off), e.Hash(), sd("spender", uint32(off)), SpendOptions{CurrentHeight: cur, Retention: ret}); err != nil {
								t.Fatal(err)
							}
						}
					}
				}
				before := r.Encode()
				if sig := r.SetMined(info, cur, ret); sig != 0 || !bytes.Equal(r.Encode(), before) {
					t.Fatalf("set-mined changed the record (signal %v)", sig)
				}
			})
		}
	}
}
