package record

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
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
		code ErrorCode
	}{
		"empty":           {nil, CodeMalformed},
		"unknown version": {append([]byte{2}, valid[1:]...), CodeUnsupportedVersion},
		"trailing":        {append(bytes.Clone(valid), 0), CodeMalformed},
		"unknown flag":    {append([]byte{1, 0x80, 0x02}, valid[2:]...), CodeMalformed},
		"unknown tag":     {unknownTag, CodeMalformed},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Inspect(c.b)
			var e *Error
			if !errors.As(err, &e) || e.Code != c.code {
				t.Fatalf("got %v, want code %v", err, c.code)
			}
		})
	}
	for name, b := range viewFixtures(t) {
		for i := range b {
			_, err := Inspect(b[:i])
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeMalformed {
				t.Fatalf("%s: prefix of %d of %d bytes: got %v, want MALFORMED", name, i, len(b), err)
			}
		}
	}
}

// spendsUnchangedByDecoding is what SpendsUnchanged must answer: decode the
// record, spend, and see whether it succeeded with the bytes unchanged.
func spendsUnchangedByDecoding(t *testing.T, b []byte, items []SpendItem, opts SpendOptions) bool {
	t.Helper()
	r := mustDecode(t, b)
	_, itemErrs, err := r.SpendMulti(items, opts)
	return err == nil && itemErrs == nil && bytes.Equal(r.Encode(), b)
}

func TestSpendsUnchangedAgreesWithSpendMulti(t *testing.T) {
	fx := viewFixtures(t)
	respend := SpendItem{Offset: 0, UtxoHash: out0, Spending: sd("spender", 1)}
	other := SpendItem{Offset: 0, UtxoHash: out0, Spending: sd("someone else", 1)}
	fresh := SpendItem{Offset: 2, UtxoHash: out2, Spending: sd("spender", 2)}
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
	cases := map[string]struct {
		b     []byte
		items []SpendItem
		opts  SpendOptions
		want  bool
	}{
		"re-spend":                  {fx["spent"], []SpendItem{respend}, spendOpts(), true},
		"re-spend twice":            {fx["spent"], []SpendItem{respend, respend}, spendOpts(), true},
		"no items":                  {fx["spent"], nil, spendOpts(), true},
		"other spender":             {fx["spent"], []SpendItem{other}, spendOpts(), false},
		"unspent":                   {fx["spent"], []SpendItem{respend, fresh}, spendOpts(), false},
		"hash mismatch":             {fx["spent"], []SpendItem{mismatch}, spendOpts(), false},
		"not stored":                {fx["spent"], []SpendItem{notStored}, spendOpts(), false},
		"beyond the outputs":        {fx["spent"], []SpendItem{beyond}, spendOpts(), false},
		"frozen marker":             {fx["spent"], []SpendItem{frozenMarker}, spendOpts(), false},
		"spender deleted":           {fx["deleted"], []SpendItem{respentDeleted}, spendOpts(), false},
		"creating":                  {flagged(func(r *Record) { r.Creating = true }), []SpendItem{respend}, spendOpts(), false},
		"conflicting":               {flagged(func(r *Record) { r.Conflicting = true }), []SpendItem{respend}, spendOpts(), false},
		"conflicting, ignored":      {flagged(func(r *Record) { r.Conflicting = true }), []SpendItem{respend}, SpendOptions{CurrentHeight: cur, Retention: ret, IgnoreConflicting: true}, true},
		"locked":                    {flagged(func(r *Record) { r.Locked = true }), []SpendItem{respend}, spendOpts(), false},
		"locked, ignored":           {flagged(func(r *Record) { r.Locked = true }), []SpendItem{respend}, SpendOptions{CurrentHeight: cur, Retention: ret, IgnoreLocked: true}, true},
		"coinbase immature":         {flagged(func(r *Record) { r.SpendingHeight = cur + 1 }), []SpendItem{respend}, spendOpts(), false},
		"coinbase mature":           {flagged(func(r *Record) { r.SpendingHeight = cur }), []SpendItem{respend}, spendOpts(), true},
		"held after reassignment":   {flagged(func(r *Record) { r.UtxoSpendableIn = map[uint32]uint32{0: cur} }), []SpendItem{respend}, spendOpts(), false},
		"released after reassigned": {flagged(func(r *Record) { r.UtxoSpendableIn = map[uint32]uint32{0: cur - 1} }), []SpendItem{respend}, spendOpts(), true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if want := spendsUnchangedByDecoding(t, c.b, c.items, c.opts); want != c.want {
				t.Fatalf("fixture: SpendMulti says %v, the case expects %v", want, c.want)
			}
			v, err := Inspect(c.b)
			if err != nil {
				t.Fatalf("Inspect: %v", err)
			}
			if got := v.SpendsUnchanged(c.items, c.opts); got != c.want {
				t.Fatalf("SpendsUnchanged = %v, want %v", got, c.want)
			}
		})
	}
}

func TestViewSetMinedEncodesAsRecordSetMined(t *testing.T) {
	infos := []MinedBlockInfo{
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
