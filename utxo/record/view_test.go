package record

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/utxo/model"
)

// viewFixtures are encodings of records of every shape a View reads.
func viewFixtures(t *testing.T) map[string][]byte {
	t.Helper()
	spent := baseRecord()
	spentAt(spent, 0, out0, sd("spender", 1))
	held := baseRecord()
	held.UtxoSpendableIn = map[uint32]uint32{0: cur + 5, 2: cur - 5}
	deleted := baseRecord()
	spentAt(deleted, 2, out2, sd("gone", 0))
	deleted.DeletedChildren = []chainhash.Hash{h("other"), h("gone")}
	fixtures := map[string][]byte{
		"rich":    richRecord().Encode(),
		"empty":   (&Record{TxID: h("e")}).Encode(),
		"base":    baseRecord().Encode(),
		"spent":   spent.Encode(),
		"held":    held.Encode(),
		"deleted": deleted.Encode(),
	}
	recs, err := Build(BuildParams{TxID: h("paged"), UtxoHashes: utxoHashes("paged", 5, 1), BatchSize: 2, Retention: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		fixtures["paged child "+string(rune('0'+r.Index))] = r.Encode()
	}
	return fixtures
}

func TestInspectReadsWhatDecodeReads(t *testing.T) {
	for name, b := range viewFixtures(t) {
		t.Run(name, func(t *testing.T) {
			r := mustDecode(t, b)
			v, err := Inspect(b)
			if err != nil {
				t.Fatalf("Inspect: %v", err)
			}
			if v.TxID() != r.TxID || v.Index() != r.Index || v.Outputs() != len(r.Utxos) {
				t.Fatalf("view %s/%d with %d outputs, record %s/%d with %d", v.TxID(), v.Index(), v.Outputs(), r.TxID, r.Index, len(r.Utxos))
			}
			for off := range uint32(len(r.Utxos)) + 2 {
				var want Entry
				if int(off) < len(r.Utxos) {
					want = r.Utxos[off]
				}
				if got := v.Entry(off); !bytes.Equal(got, want) || (got == nil) != (want == nil) {
					t.Fatalf("entry %d: view %x, record %x", off, got, want)
				}
			}
		})
	}
}

// TestInspectTxReadsWhatDecodeReads: the head and the transaction's bytes
// InspectTx reads are Decode's.
func TestInspectTxReadsWhatDecodeReads(t *testing.T) {
	for name, b := range viewFixtures(t) {
		t.Run(name, func(t *testing.T) {
			r := mustDecode(t, b)
			head, tx, err := InspectTx(b)
			if err != nil {
				t.Fatalf("InspectTx: %v", err)
			}
			if !bytes.Equal(tx, r.Tx) || head.TxID != r.TxID || head.IsCoinbase != r.IsCoinbase || head.External != r.External ||
				!slices.Equal(head.BlockHeights, r.BlockHeights) || !slices.Equal(head.BlockIDs, r.BlockIDs) {
				t.Fatalf("InspectTx: head %+v tx %x\nDecode: %+v", head, tx, r)
			}
		})
	}
	if _, _, err := InspectTx(richRecord().Encode()[:20]); err == nil {
		t.Fatal("a truncated record was read")
	}
}

func TestInspectRefusesDamage(t *testing.T) {
	valid := richRecord().Encode()
	var unknownTag []byte
	{
		r := baseRecord()
		b := r.Encode()
		// The last entry is output 2, unspent: its tag sits 33 bytes from the end.
		unknownTag = bytes.Clone(b)
		unknownTag[len(b)-1-UtxoHashSize] = 7
	}
	cases := map[string]struct {
		b    []byte
		code model.ErrorCode
	}{
		"empty":           {nil, model.CodeMalformed},
		"unknown version": {append([]byte{2}, valid[1:]...), model.CodeUnsupportedVersion},
		"trailing":        {append(bytes.Clone(valid), 0), model.CodeMalformed},
		"unknown flag":    {append([]byte{1, 0x80, 0x02}, valid[2:]...), model.CodeMalformed},
		"unknown tag":     {unknownTag, model.CodeMalformed},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Inspect(c.b)
			var e *model.Error
			if !errors.As(err, &e) || e.Code != c.code {
				t.Fatalf("got %v, want code %v", err, c.code)
			}
		})
	}
	for name, b := range viewFixtures(t) {
		for i := range b {
			_, err := Inspect(b[:i])
			var e *model.Error
			if !errors.As(err, &e) || e.Code != model.CodeMalformed {
				t.Fatalf("%s: prefix of %d of %d bytes: got %v, want MALFORMED", name, i, len(b), err)
			}
		}
	}
}

// checkViewSpendsAsRecord spends items on the record encoded in b twice,
// decoded and through a View, and fails t unless both give the same
// outcome and write the same record.
func checkViewSpendsAsRecord(t *testing.T, b []byte, items []SpendItem, opts SpendOptions) {
	t.Helper()
	r := mustDecode(t, b)
	wantSig, wantItemErrs, wantErr := r.SpendMulti(slices.Clone(items), opts)
	v, err := Inspect(b)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	sig, itemErrs, err := v.SpendMulti(items, opts)
	if sig != wantSig || !reflect.DeepEqual(err, wantErr) || !reflect.DeepEqual(itemErrs, wantItemErrs) {
		t.Fatalf("view: %v, %v, %v; record: %v, %v, %v", sig, itemErrs, err, wantSig, wantItemErrs, wantErr)
	}
	// b may hold varints longer than they need, which Encode writes
	// shorter: compare what each writes once decoded and encoded again.
	if got, want := reencode(t, v.AppendEncode(nil)), reencode(t, r.Encode()); !bytes.Equal(got, want) {
		t.Fatalf("view encodes as\n%x, the record as\n%x", got, want)
	}
	if v.Head().Terms() != r.Terms() {
		t.Fatalf("terms %+v, want %+v", v.Head().Terms(), r.Terms())
	}
}

func TestViewSpendMultiAgreesWithRecordSpendMulti(t *testing.T) {
	fx := viewFixtures(t)
	respend := SpendItem{Offset: 0, UtxoHash: out0, Spending: sd("spender", 1)}
	other := SpendItem{Offset: 0, UtxoHash: out0, Spending: sd("someone else", 1)}
	fresh := SpendItem{Offset: 2, UtxoHash: out2, Spending: sd("spender", 2)}
	freshOther := SpendItem{Offset: 2, UtxoHash: out2, Spending: sd("someone else", 2)}
	mismatch := SpendItem{Offset: 0, UtxoHash: out2, Spending: sd("spender", 1)}
	notStored := SpendItem{Offset: 1, UtxoHash: out0, Spending: sd("spender", 1)}
	beyond := SpendItem{Offset: 9, UtxoHash: out0, Spending: sd("spender", 1)}
	frozenMarker := SpendItem{Offset: 0, UtxoHash: out0, Spending: frozenSpendingData}
	respentDeleted := SpendItem{Offset: 2, UtxoHash: out2, Spending: sd("gone", 0)}
	flagged := func(f func(r *Record)) []byte {
		r := mustDecode(t, fx["spent"])
		f(r)
		return r.Encode()
	}
	conflicting := SpendOptions{CurrentHeight: cur, Retention: ret, IgnoreConflicting: true}
	locked := SpendOptions{CurrentHeight: cur, Retention: ret, IgnoreLocked: true}
	cases := map[string]struct {
		b     []byte
		items []SpendItem
		opts  SpendOptions
	}{
		"re-spend":                  {fx["spent"], []SpendItem{respend}, spendOpts()},
		"re-spend twice":            {fx["spent"], []SpendItem{respend, respend}, spendOpts()},
		"no items":                  {fx["spent"], nil, spendOpts()},
		"other spender":             {fx["spent"], []SpendItem{other}, spendOpts()},
		"last output: all spent":    {fx["spent"], []SpendItem{respend, fresh}, spendOpts()},
		"spent twice in one call":   {fx["spent"], []SpendItem{fresh, freshOther}, spendOpts()},
		"first of two outputs":      {fx["base"], []SpendItem{fresh}, spendOpts()},
		"both outputs":              {fx["base"], []SpendItem{fresh, {Offset: 0, UtxoHash: out0, Spending: sd("x", 0)}}, spendOpts()},
		"no retention":              {fx["spent"], []SpendItem{fresh}, SpendOptions{CurrentHeight: cur}},
		"hash mismatch":             {fx["spent"], []SpendItem{mismatch, fresh}, spendOpts()},
		"not stored":                {fx["spent"], []SpendItem{notStored}, spendOpts()},
		"beyond the outputs":        {fx["spent"], []SpendItem{beyond}, spendOpts()},
		"frozen marker":             {fx["spent"], []SpendItem{frozenMarker}, spendOpts()},
		"spender deleted":           {fx["deleted"], []SpendItem{respentDeleted}, spendOpts()},
		"held outputs":              {fx["held"], []SpendItem{{Offset: 0, UtxoHash: out0, Spending: sd("x", 0)}, fresh}, spendOpts()},
		"rich record":               {fx["rich"], []SpendItem{{Offset: 0, UtxoHash: out0, Spending: sd("x", 0)}}, spendOpts()},
		"child record":              {fx["paged child 1"], []SpendItem{{Offset: 1, UtxoHash: *utxoHashes("paged", 5, 1)[3], Spending: sd("x", 0)}}, spendOpts()},
		"creating":                  {flagged(func(r *Record) { r.Creating = true }), []SpendItem{fresh}, spendOpts()},
		"conflicting":               {flagged(func(r *Record) { r.Conflicting = true }), []SpendItem{fresh}, spendOpts()},
		"conflicting, ignored":      {flagged(func(r *Record) { r.Conflicting = true }), []SpendItem{fresh}, conflicting},
		"locked":                    {flagged(func(r *Record) { r.Locked = true }), []SpendItem{fresh}, spendOpts()},
		"locked, ignored":           {flagged(func(r *Record) { r.Locked = true }), []SpendItem{fresh}, locked},
		"coinbase immature":         {flagged(func(r *Record) { r.SpendingHeight = cur + 1 }), []SpendItem{fresh}, spendOpts()},
		"coinbase mature":           {flagged(func(r *Record) { r.SpendingHeight = cur }), []SpendItem{fresh}, spendOpts()},
		"held after reassignment":   {flagged(func(r *Record) { r.UtxoSpendableIn = map[uint32]uint32{2: cur} }), []SpendItem{fresh}, spendOpts()},
		"released after reassigned": {flagged(func(r *Record) { r.UtxoSpendableIn = map[uint32]uint32{2: cur - 1} }), []SpendItem{fresh}, spendOpts()},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			checkViewSpendsAsRecord(t, c.b, c.items, c.opts)
		})
	}
	// A wide record, many of its outputs spent in one call out of order,
	// one of them twice and one by two spenders, some not stored.
	wideHashes := utxoHashes("wide", 300, 7, 150)
	wide, err := Build(BuildParams{TxID: h("wide"), UtxoHashes: wideHashes, BatchSize: 300})
	if err != nil {
		t.Fatal(err)
	}
	var items []SpendItem
	for _, offset := range []uint32{299, 0, 150, 7, 3, 298, 42, 1, 42, 200, 201, 0} {
		hash := h("none")
		if wideHashes[offset] != nil {
			hash = *wideHashes[offset]
		}
		items = append(items, SpendItem{Offset: offset, UtxoHash: hash, Spending: sd("wide spender", offset)})
	}
	items[len(items)-1].Spending = sd("someone else", 0)
	t.Run("wide record", func(t *testing.T) {
		checkViewSpendsAsRecord(t, wide[0].Encode(), items, spendOpts())
	})
}

func TestViewSetMinedEncodesAsRecordSetMined(t *testing.T) {
	infos := []model.MinedBlockInfo{
		{BlockID: 7, BlockHeight: 100, OnLongestChain: true}, // already there
		{BlockID: 8, BlockHeight: 102, SubtreeIdx: 3, OnLongestChain: true},
		{BlockID: 8, BlockHeight: 102},
		{BlockID: 1, UnsetMined: true},
		{BlockID: 9, UnsetMined: true}, // not there
	}
	for name, b := range viewFixtures(t) {
		for _, info := range infos {
			t.Run(fmt.Sprintf("%s %+v", name, info), func(t *testing.T) {
				v, err := Inspect(b)
				if err != nil {
					t.Fatal(err)
				}
				if got := v.AppendEncode(nil); !bytes.Equal(got, b) {
					t.Fatalf("unchanged view encodes as %x, want %x", got, b)
				}
				r := mustDecode(t, b)
				wantSig := r.SetMined(info, cur, ret)
				if sig := v.SetMined(info, cur, ret); sig != wantSig {
					t.Fatalf("signal %v, want %v", sig, wantSig)
				}
				if got, want := v.AppendEncode(nil), r.Encode(); !bytes.Equal(got, want) {
					t.Fatalf("view encodes as\n%x, the record as\n%x", got, want)
				}
				if v.Head().Terms() != r.Terms() {
					t.Fatalf("terms %+v, want %+v", v.Head().Terms(), r.Terms())
				}
			})
		}
	}
}
