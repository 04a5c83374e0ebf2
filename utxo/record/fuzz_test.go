package record

import (
	"bytes"
	"testing"

	"github.com/utxostore/utxostore/utxo/model"
)

// Each fuzz target is seeded with valid encodings and checks that decoding
// arbitrary bytes never panics and that decode → encode → decode is stable.

func FuzzRecord(f *testing.F) {
	f.Add(richRecord().Encode())
	f.Add((&Record{TxID: h("e")}).Encode())
	recs, _ := Build(BuildParams{TxID: h("f"), UtxoHashes: utxoHashes("f", 5, 1), BatchSize: 2, Conflicting: true, Retention: 5})
	for _, r := range recs {
		f.Add(r.Encode())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		view, verr := Inspect(b) // never panics, whatever b holds
		r, err := Decode(b)
		if err != nil {
			if _, uerr := DecodeForUpdate(b); uerr == nil {
				t.Fatalf("DecodeForUpdate accepts what Decode refuses: %v", err)
			}
			if verr == nil {
				t.Fatalf("Inspect accepts what Decode refuses: %v", err)
			}
			return
		}
		// A View reads what Decode reads, and a spend through it does what
		// it does on the decoded record.
		if verr != nil {
			t.Fatalf("Decode accepts what Inspect refuses: %v", verr)
		}
		for off := range uint32(len(r.Utxos)) + 1 {
			if e := view.Entry(off); int(off) < len(r.Utxos) && !bytes.Equal(e, r.Utxos[off]) || int(off) >= len(r.Utxos) && e != nil {
				t.Fatalf("entry %d: view %x, record %x", off, e, r.Utxos)
			}
			s, _ := view.Entry(off).SpendingData()
			again := SpendItem{Offset: off, UtxoHash: view.Entry(off).Hash(), Spending: s}
			fresh := SpendItem{Offset: off, UtxoHash: again.UtxoHash, Spending: sd("fuzz spender", off)}
			for _, items := range [][]SpendItem{{again}, {fresh}, {fresh, again}} {
				for _, opts := range []SpendOptions{{CurrentHeight: 1 << 20, Retention: 10}, {CurrentHeight: 1, IgnoreLocked: true, IgnoreConflicting: true}} {
					checkViewSpendsAsRecord(t, b, items, opts)
				}
			}
		}
		enc := r.Encode()
		// A View re-encodes its head and copies the rest: what it writes
		// decodes to the record Decode reads (b may hold varints longer
		// than they need, which Encode writes shorter).
		if !bytes.Equal(reencode(t, view.AppendEncode(nil)), enc) {
			t.Fatal("an unchanged View does not encode the record it read")
		}
		r2, err := Decode(enc)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !bytes.Equal(r2.Encode(), enc) {
			t.Fatal("encoding not stable")
		}
		// The update path's decode agrees with the full one, before and
		// after operating on the record.
		u, err := DecodeForUpdate(b)
		if err != nil {
			t.Fatalf("Decode accepts what DecodeForUpdate refuses: %v", err)
		}
		if !bytes.Equal(u.Encode(), enc) || !bytes.Equal(operateOn(u), operateOn(r2)) {
			t.Fatal("DecodeForUpdate encodes differently from Decode")
		}
		// Operations on any valid record keep it valid and never panic.
		var zero [32]byte
		for off := uint32(0); off < uint32(min(len(r.Utxos), 3)); off++ {
			hash := r.Utxos[off].Hash()
			_, _ = r.Spend(off, hash, spA, SpendOptions{CurrentHeight: 1 << 20, Retention: 10, IgnoreLocked: true, IgnoreConflicting: true})
			_ = r.Freeze(off, hash)
			_ = r.Reassign(off, hash, zero, 5, 1000)
			_, _ = r.Unspend(off, hash, UnspendOptions{CurrentHeight: 1, Retention: 10})
		}
		mined := model.MinedBlockInfo{BlockID: 1, BlockHeight: 2, OnLongestChain: true}
		fresh := mustDecode(t, b)
		if viewSig, sig := view.SetMined(mined, 3, 10), fresh.SetMined(mined, 3, 10); viewSig != sig || !bytes.Equal(reencode(t, view.AppendEncode(nil)), fresh.Encode()) {
			t.Fatal("SetMined through a View differs from SetMined on the decoded record")
		}
		r.SetMined(mined, 3, 10)
		_, _ = r.IncrementSpentExtraRecs(1, 3, 10)
		if err := r.Validate(); err != nil {
			t.Fatalf("operations broke the record: %v", err)
		}
	})
}

// reencode decodes b and encodes the record again.
func reencode(t *testing.T, b []byte) []byte {
	t.Helper()
	r, err := Decode(b)
	if err != nil {
		t.Fatalf("decoding a View's encoding: %v", err)
	}
	return r.Encode()
}

func FuzzEntry(f *testing.F) {
	f.Add([]byte(NewUnspentEntry(h("a"))))
	f.Add([]byte(NewSpentEntry(h("a"), spA)))
	f.Add([]byte(NewFrozenEntry(h("a"))))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeEntry(b)
		if err != nil {
			return
		}
		e2, err := DecodeEntry(e)
		if err != nil || !bytes.Equal(e, e2) || e.IsSpent() && e.IsFrozen() {
			t.Fatal("unstable entry")
		}
		if s, ok := e.SpendingData(); ok && !bytes.Equal(NewSpentEntry(e.Hash(), s), e) {
			t.Fatal("spent entry does not rebuild")
		}
	})
}

func FuzzSpendingData(f *testing.F) {
	f.Add(appendSpendingData(nil, spA))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSpendingData(b)
		if err != nil {
			return
		}
		if enc := appendSpendingData(nil, s); !bytes.Equal(enc, b) {
			t.Fatal("not a bijection")
		}
	})
}

func FuzzExtendedInput(f *testing.F) {
	f.Add((&ExtendedInput{PreviousTxID: h("p"), ScriptSig: []byte{1, 2}, PreviousTxScript: []byte{0xac}}).Bytes())
	f.Add((&ExtendedInput{}).Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := DecodeExtendedInput(b)
		if err != nil {
			return
		}
		enc := in.Bytes()
		in2, err := DecodeExtendedInput(enc)
		if err != nil || !bytes.Equal(in2.Bytes(), enc) || !bytes.Equal(enc, b) {
			t.Fatal("unstable input")
		}
	})
}

func FuzzOutput(f *testing.F) {
	f.Add((&Output{Satoshis: 5, LockingScript: []byte{0x76, 0xa9}}).Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := DecodeOutput(b)
		if err != nil {
			return
		}
		if !bytes.Equal(o.Bytes(), b) {
			t.Fatal("unstable output")
		}
	})
}

func FuzzUTXOWrapper(f *testing.F) {
	w := &UTXOWrapper{TxID: h("w"), Height: 9, Coinbase: true, UTXOs: []WrappedUTXO{{1, 2, []byte{3}}}}
	b, _ := w.Bytes()
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := DecodeUTXOWrapper(b)
		if err != nil {
			return
		}
		enc, err := w.Bytes()
		if err != nil || !bytes.Equal(enc, b) {
			t.Fatalf("unstable wrapper: %v", err)
		}
	})
}

func FuzzTxInpoints(f *testing.F) {
	enc, _ := EncodeTxInpoints(model.NewTxInpoints([]model.Outpoint{{TxID: h("a"), Vout: 1}, {TxID: h("b"), Vout: 2}, {TxID: h("a"), Vout: 3}}))
	f.Add(enc)
	f.Fuzz(func(t *testing.T, b []byte) {
		ti, err := DecodeTxInpoints(b)
		if err != nil {
			return
		}
		enc, err := EncodeTxInpoints(ti)
		if err != nil || !bytes.Equal(enc, b) {
			t.Fatalf("unstable inpoints: %v", err)
		}
	})
}
