package record

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/utxostore/utxostore/utxo/model"
)

func TestRecordRoundTrip(t *testing.T) {
	cases := map[string]*Record{
		"empty master": {TxID: h("e")},
		"rich master":  richRecord(),
		"child": {
			TxID: h("big"), Index: 2, FirstVout: 40000,
			Utxos:       []Entry{NewUnspentEntry(hn("b", 1)), NewSpentEntry(hn("b", 2), sd("x", 0))},
			RecordUtxos: 2, SpentUtxos: 1, Version: 1, Fee: 10, IsCoinbase: false, Locked: true, DeleteAtHeight: 77,
		},
		"external no tx":     {TxID: h("ext"), External: true, Utxos: []Entry{nil, nil}, TotalUtxos: 2},
		"empty tx bytes":     {TxID: h("emptytx"), Tx: []byte{}},
		"negative createdAt": {TxID: h("neg"), CreatedAt: -5},
	}
	for name, rec := range cases {
		t.Run(name, func(t *testing.T) {
			if err := rec.Validate(); err != nil {
				t.Fatalf("fixture invalid: %v", err)
			}
			b := rec.Encode()
			if b[0] != FormatVersion {
				t.Fatalf("first byte %d", b[0])
			}
			got := mustDecode(t, b)
			if !reflect.DeepEqual(normalize(rec), normalize(got)) {
				t.Fatalf("round trip:\nwant %+v\ngot  %+v", rec, got)
			}
			if !bytes.Equal(got.Encode(), b) {
				t.Fatal("re-encoding differs")
			}
			if (rec.Tx == nil) != (got.Tx == nil) {
				t.Fatal("nil vs empty Tx not preserved")
			}
		})
	}
}

// normalize maps empty collections to nil so DeepEqual compares content.
func normalize(r *Record) *Record {
	c := r.Clone()
	if len(c.UtxoSpendableIn) == 0 {
		c.UtxoSpendableIn = nil
	}
	if len(c.Utxos) == 0 {
		c.Utxos = nil
	}
	for i, e := range c.Utxos {
		if len(e) == 0 {
			c.Utxos[i] = nil
		}
	}
	return c
}

func TestDecodeRejects(t *testing.T) {
	valid := richRecord().Encode()
	mutate := func(f func(r *Record)) []byte {
		r := richRecord()
		f(r)
		return r.Encode()
	}
	cases := map[string]struct {
		b    []byte
		code model.ErrorCode
	}{
		"empty":               {nil, model.CodeMalformed},
		"unknown version":     {append([]byte{2}, valid[1:]...), model.CodeUnsupportedVersion},
		"version zero":        {append([]byte{0}, valid[1:]...), model.CodeUnsupportedVersion},
		"truncated":           {valid[:len(valid)-1], model.CodeMalformed},
		"trailing":            {append(bytes.Clone(valid), 0), model.CodeMalformed},
		"unknown flag":        {append([]byte{1, 0x80, 0x02}, valid[2:]...), model.CodeMalformed},
		"recordUtxos wrong":   {mutate(func(r *Record) { r.RecordUtxos++ }), model.CodeMalformed},
		"spentUtxos wrong":    {mutate(func(r *Record) { r.SpentUtxos = 0 }), model.CodeMalformed},
		"frozen flag wrong":   {mutate(func(r *Record) { r.Frozen = false }), model.CodeMalformed},
		"bad entry size":      {mutate(func(r *Record) { r.Utxos[0] = r.Utxos[0][:31] }), model.CodeMalformed},
		"block lists differ":  {mutate(func(r *Record) { r.BlockHeights = r.BlockHeights[:1] }), model.CodeMalformed},
		"spentExtra > total":  {mutate(func(r *Record) { r.SpentExtraRecs = 1 }), model.CodeMalformed},
		"spendableIn range":   {mutate(func(r *Record) { r.UtxoSpendableIn[5] = 1 }), model.CodeMalformed},
		"reassignment range":  {mutate(func(r *Record) { r.Reassignments[0].Offset = 9 }), model.CodeMalformed},
		"master with vout":    {mutate(func(r *Record) { r.FirstVout = 1 }), model.CodeMalformed},
		"hostile utxos count": {append(mutate(func(r *Record) { r.Utxos = nil; r.RecordUtxos, r.SpentUtxos, r.Frozen = 0, 0, false })[:len(mutate(func(r *Record) { r.Utxos = nil; r.RecordUtxos, r.SpentUtxos, r.Frozen = 0, 0, false }))-1], 0xff, 0xff, 0xff, 0xff, 0x0f), model.CodeMalformed},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Decode(c.b)
			var e *model.Error
			if !errors.As(err, &e) || e.Code != c.code {
				t.Fatalf("got %v, want code %v", err, c.code)
			}
		})
	}
}

func TestDecodeEveryTruncation(t *testing.T) {
	valid := richRecord().Encode()
	for i := range valid {
		if _, err := Decode(valid[:i]); err == nil {
			t.Fatalf("prefix of %d bytes decoded", i)
		}
	}
}

func TestDecodeDoesNotAlias(t *testing.T) {
	b := richRecord().Encode()
	r := mustDecode(t, b)
	want := r.Encode()
	for i := range b {
		b[i] = 0
	}
	if !bytes.Equal(r.Encode(), want) {
		t.Fatal("decoded record aliases its input")
	}
}

func TestEncodeCompact(t *testing.T) {
	// A fresh 2-output unmined tx record: the utxo entries dominate.
	r := &Record{TxID: h("c"), Utxos: []Entry{NewUnspentEntry(h("a")), NewUnspentEntry(h("b"))}, RecordUtxos: 2, TotalUtxos: 2, UnminedSince: 800000, CreatedAt: 1_700_000_000_000}
	if n := len(r.Encode()); n > 32+2*33+40 {
		t.Fatalf("encoding is %d bytes", n)
	}
}

func BenchmarkDecode20000(b *testing.B) {
	r := &Record{TxID: h("bench")}
	for i := range 20000 {
		if i%3 == 0 {
			r.Utxos = append(r.Utxos, NewSpentEntry(hn("b", i), sd("s", uint32(i))))
			r.SpentUtxos++
		} else {
			r.Utxos = append(r.Utxos, NewUnspentEntry(hn("b", i)))
		}
		r.RecordUtxos++
	}
	enc := r.Encode()
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode20000(b *testing.B) {
	r := &Record{TxID: h("bench")}
	for i := range 20000 {
		r.Utxos = append(r.Utxos, NewUnspentEntry(hn("b", i)))
		r.RecordUtxos++
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Encode()
	}
}

// DecodeShared gives the same record as Decode, and operating on it and
// encoding it never writes into the bytes it shares: the engine's buffer.
func TestDecodeSharedLeavesItsBytesAlone(t *testing.T) {
	rec := richRecord()
	rec.Utxos = append(rec.Utxos, NewUnspentEntry(hn("shared", 1)), NewUnspentEntry(hn("shared", 2)))
	rec.RecordUtxos += 2
	b := rec.Encode()
	original := bytes.Clone(b)
	shared, err := DecodeShared(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normalize(mustDecode(t, b)), normalize(shared)) {
		t.Fatal("DecodeShared and Decode differ")
	}
	last := uint32(len(shared.Utxos) - 1)
	shared.Locked, shared.Conflicting, shared.Creating = false, false, false
	if _, err := shared.Spend(last, hn("shared", 2), sd("spender", 0), SpendOptions{CurrentHeight: 1000}); err != nil {
		t.Fatal(err)
	}
	if err := shared.Freeze(last-1, hn("shared", 1)); err != nil {
		t.Fatal(err)
	}
	next := shared.Encode()
	if !bytes.Equal(b, original) {
		t.Fatal("operating on a shared record changed the bytes it was decoded from")
	}
	again := mustDecode(t, next)
	if !again.Utxos[last].IsSpent() || !again.Utxos[last-1].IsFrozen() {
		t.Fatal("the operations are not in the new encoding")
	}
}

// operateOn applies one of every kind of operation to r, as a
// read-modify-write would, and returns r's encoding afterwards.
func operateOn(r *Record) []byte {
	opts := SpendOptions{CurrentHeight: 1 << 20, Retention: 10, IgnoreLocked: true, IgnoreConflicting: true}
	for off := range uint32(min(len(r.Utxos), 3)) {
		hash := r.Utxos[off].Hash()
		_, _ = r.Spend(off, hash, sd("operate", off), opts)
	}
	r.SetMined(model.MinedBlockInfo{BlockID: 42, BlockHeight: 43, OnLongestChain: true}, 44, 10)
	if len(r.Utxos) > 0 {
		_, _ = r.Unspend(0, r.Utxos[0].Hash(), UnspendOptions{CurrentHeight: 45, Retention: 10})
	}
	return r.Encode()
}

// DecodeForUpdate leaves the inpoints encoded, yet re-encoding its record,
// before or after any operation, gives the bytes a fully decoded record
// gives, and the bytes it was decoded from stay untouched.
func TestDecodeForUpdateEncodesAsDecode(t *testing.T) {
	big, err := Build(BuildParams{TxID: h("paged"), UtxoHashes: utxoHashes("paged", 5, 1), BatchSize: 2, Retention: 5,
		TxInpoints: model.NewTxInpoints([]model.Outpoint{{TxID: h("p"), Vout: 1}})})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]*Record{
		"rich master":  richRecord(),
		"no inpoints":  {TxID: h("e")},
		"paged master": big[0],
		"paged child":  big[1],
		"many parents": {TxID: h("many"), Utxos: []Entry{NewUnspentEntry(hn("m", 0))}, RecordUtxos: 1, Tx: []byte{7},
			TxInpoints: model.NewTxInpoints([]model.Outpoint{{TxID: h("a"), Vout: 0}, {TxID: h("b"), Vout: 1 << 31}, {TxID: h("a"), Vout: 5}, {TxID: h("c"), Vout: 2}})},
	}
	for name, rec := range cases {
		t.Run(name, func(t *testing.T) {
			b := rec.Encode()
			original := bytes.Clone(b)
			r, err := DecodeForUpdate(b)
			if err != nil {
				t.Fatal(err)
			}
			if !r.TxInpoints.IsEmpty() {
				t.Fatal("DecodeForUpdate decoded the inpoints")
			}
			if !bytes.Equal(r.Encode(), b) {
				t.Fatal("re-encoding differs from the bytes read")
			}
			if !bytes.Equal(operateOn(r), operateOn(mustDecode(t, b))) {
				t.Fatal("operating on the record of DecodeForUpdate encodes differently from Decode's")
			}
			if !bytes.Equal(b, original) {
				t.Fatal("operating on the record changed the bytes it was decoded from")
			}
			clone := r.Clone()
			r.Unshare()
			if !bytes.Equal(clone.Encode(), operateOn(mustDecode(t, b))) {
				t.Fatal("a clone lost the kept inpoints")
			}
			if r.Utxos != nil || r.Tx != nil || r.keptInpoints != nil {
				t.Fatal("Unshare kept fields that share the bytes read")
			}
		})
	}
}

// Inpoints that DecodeTxInpoints refuses make DecodeForUpdate refuse the
// record too, though it does not decode them.
func TestDecodeForUpdateChecksInpoints(t *testing.T) {
	rec := &Record{TxID: h("bad"), TxInpoints: model.NewTxInpoints([]model.Outpoint{{TxID: h("p"), Vout: 1}, {TxID: h("q"), Vout: 2}})}
	good := rec.Encode()
	inp, err := EncodeTxInpoints(rec.TxInpoints)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(good, inp)
	if at < 0 {
		t.Fatal("inpoints not found in the encoding")
	}
	damaged := map[string][]byte{
		"index count too large": func() []byte {
			b := bytes.Clone(good)
			b[at+4+2*32] = 9 // the first parent's count of indices
			return b
		}(),
		"parent count too large": func() []byte {
			b := bytes.Clone(good)
			b[at] = 3
			return b
		}(),
	}
	for name, b := range damaged {
		t.Run(name, func(t *testing.T) {
			_, want := Decode(b)
			_, got := DecodeForUpdate(b)
			if want == nil || got == nil {
				t.Fatalf("damaged inpoints accepted: Decode %v, DecodeForUpdate %v", want, got)
			}
			var e *model.Error
			if !errors.As(got, &e) || e.Code != model.CodeMalformed {
				t.Fatalf("DecodeForUpdate: %v, want MALFORMED", got)
			}
		})
	}
}
