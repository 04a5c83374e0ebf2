package record

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/utxo/model"
)

func TestEntryCodec(t *testing.T) {
	hash := h("e")
	for _, c := range []struct {
		name                   string
		e                      Entry
		stored, unspent, spent bool
		frozen                 bool
		wantLen                int
	}{
		{"nil", nil, false, false, false, false, 0},
		{"unspent", NewUnspentEntry(hash), true, true, false, false, 32},
		{"spent", NewSpentEntry(hash, spA), true, false, true, false, 68},
		{"frozen", NewFrozenEntry(hash), true, false, false, true, 68},
	} {
		t.Run(c.name, func(t *testing.T) {
			if len(c.e) != c.wantLen || c.e.Stored() != c.stored || c.e.IsUnspent() != c.unspent || c.e.IsSpent() != c.spent || c.e.IsFrozen() != c.frozen {
				t.Fatalf("classification of %x", []byte(c.e))
			}
			d, err := DecodeEntry(c.e)
			if err != nil || !bytes.Equal(d, c.e) {
				t.Fatal(err)
			}
			if c.stored && (d.Hash() != hash || !d.HashEquals(&hash)) {
				t.Fatal("hash")
			}
			if s, ok := d.SpendingData(); ok != c.spent || (ok && s != spA) {
				t.Fatal("spending data")
			}
		})
	}
	// An output spent by input 2 of B: the spending data holds B's txid and
	// the input index, little-endian.
	e := NewSpentEntry(hash, model.SpendingData{TxID: h("B"), Vin: 2})
	if !bytes.Equal(e[64:], []byte{2, 0, 0, 0}) || !bytes.Equal(e[32:64], func() []byte { b := h("B"); return b[:] }()) {
		t.Fatalf("layout %x", []byte(e))
	}
	for _, n := range []int{1, 31, 33, 67, 69} {
		if _, err := DecodeEntry(make([]byte, n)); !errors.Is(err, model.ErrMalformed) {
			t.Fatalf("size %d accepted", n)
		}
	}
}

func TestSpendingDataCodec(t *testing.T) {
	b := appendSpendingData(nil, spA)
	if len(b) != SpendingDataSize || !bytes.Equal(b[:32], spA.TxID[:]) || !bytes.Equal(b[32:], []byte{1, 0, 0, 0}) {
		t.Fatal("layout")
	}
	got, err := DecodeSpendingData(b[:])
	if err != nil || got != spA || isFrozenMarker(got) {
		t.Fatal(err)
	}
	all := bytes.Repeat([]byte{0xff}, 36)
	if f, _ := DecodeSpendingData(all); !isFrozenMarker(f) {
		t.Fatal("marker")
	}
	if _, err := DecodeSpendingData(b[:35]); !errors.Is(err, model.ErrMalformed) {
		t.Fatal("short accepted")
	}
}

func TestExtendedInputCodec(t *testing.T) {
	in := ExtendedInput{PreviousTxID: h("prev"), PreviousTxOutIndex: 3, ScriptSig: []byte{0x51, 0x52}, Sequence: 0xffffffff,
		PreviousTxSatoshis: 5000, PreviousTxScript: bytes.Repeat([]byte{0x6a}, 300)}
	b := in.Bytes()
	want := 32 + 4 + 1 + 2 + 4 + 8 + 3 + 300
	if len(b) != want || b[36] != 2 || b[32] != 3 || b[len(b)-303] != 0xfd {
		t.Fatalf("layout %d bytes", len(b))
	}
	got, err := DecodeExtendedInput(b)
	if err != nil || !reflect.DeepEqual(got, in) {
		t.Fatalf("%v %+v", err, got)
	}
	nilScript := ExtendedInput{PreviousTxID: h("p")}
	nb := nilScript.Bytes()
	if nb[len(nb)-1] != 0 || len(nb) != 32+4+1+4+8+1 {
		t.Fatal("nil previous script is not a single 0x00")
	}
	if got, _ := DecodeExtendedInput(nb); got.PreviousTxScript != nil || got.ScriptSig != nil {
		t.Fatal("nil scripts")
	}
	for i := range b {
		if _, err := DecodeExtendedInput(b[:i]); err == nil {
			t.Fatalf("prefix %d accepted", i)
		}
	}
	nonCanonical := append(append([]byte{}, nb[:36]...), 0xfd, 0x01, 0x00)
	if _, err := DecodeExtendedInput(nonCanonical); !errors.Is(err, model.ErrMalformed) {
		t.Fatal("non-canonical compact size accepted")
	}
}

func TestOutputCodec(t *testing.T) {
	for _, o := range []Output{{0, nil}, {1, []byte{0x6a}}, {21e14, bytes.Repeat([]byte{1}, 70000)}} {
		b := o.Bytes()
		got, err := DecodeOutput(b)
		if err != nil || !reflect.DeepEqual(got, o) {
			t.Fatalf("%v", err)
		}
	}
	if b := (&Output{Satoshis: 1, LockingScript: []byte{0xac}}).Bytes(); !bytes.Equal(b, []byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0xac}) {
		t.Fatalf("%x", b)
	}
	if _, err := DecodeOutput([]byte{1, 0, 0, 0, 0, 0, 0, 0, 2, 0xac}); err == nil {
		t.Fatal("short script accepted")
	}
	if _, err := DecodeOutput(append((&Output{}).Bytes(), 0)); err == nil {
		t.Fatal("trailing accepted")
	}
}

func TestUTXOWrapperCodec(t *testing.T) {
	w := &UTXOWrapper{TxID: h("w"), Height: 123, Coinbase: true, UTXOs: []WrappedUTXO{{0, 50, []byte{0xac}}, {7, 0, nil}}}
	b, err := w.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 40+17+16 || b[32] != 123<<1|1 || b[36] != 2 {
		t.Fatalf("layout %x", b)
	}
	got, err := DecodeUTXOWrapper(b)
	if err != nil || !reflect.DeepEqual(got, w) {
		t.Fatalf("%v %+v", err, got)
	}
	if _, err := (&UTXOWrapper{Height: MaxWrapperHeight + 1}).Bytes(); !errors.Is(err, model.ErrInvalidParameter) {
		t.Fatal("height overflow accepted")
	}
	hostile := append(b[:36:36], 0xff, 0xff, 0xff, 0xff)
	if _, err := DecodeUTXOWrapper(hostile); !errors.Is(err, model.ErrMalformed) {
		t.Fatal("hostile count accepted")
	}
	empty := &UTXOWrapper{TxID: h("e"), Height: MaxWrapperHeight}
	eb, _ := empty.Bytes()
	if got, err := DecodeUTXOWrapper(eb); err != nil || got.Height != MaxWrapperHeight || got.Coinbase || got.UTXOs != nil {
		t.Fatal(err)
	}
}

func TestTxInpoints(t *testing.T) {
	a, b := h("A"), h("B")
	ti := model.NewTxInpoints([]model.Outpoint{{TxID: a, Vout: 0}, {TxID: b, Vout: 1}, {TxID: a, Vout: 2}})
	if !reflect.DeepEqual(ti.ParentTxHashes, []chainhash.Hash{a, b}) || !reflect.DeepEqual(ti.Idxs, [][]uint32{{0, 2}, {1}}) || ti.Len() != 3 {
		t.Fatalf("%+v", ti)
	}
	if !reflect.DeepEqual(ti.Outpoints(), []model.Outpoint{{TxID: a, Vout: 0}, {TxID: a, Vout: 2}, {TxID: b, Vout: 1}}) {
		t.Fatal("outpoints")
	}
	enc, err := EncodeTxInpoints(ti)
	if err != nil || len(enc) != 4+64+4+8+4+4 || enc[0] != 2 || !bytes.Equal(enc[4:36], a[:]) {
		t.Fatalf("layout %x", enc)
	}
	got, err := DecodeTxInpoints(enc)
	if err != nil || !reflect.DeepEqual(got, ti) {
		t.Fatalf("%v %+v", err, got)
	}
	if e, _ := EncodeTxInpoints(model.TxInpoints{}); !bytes.Equal(e, []byte{0, 0, 0, 0}) {
		t.Fatal("empty")
	}
	if _, err := EncodeTxInpoints(model.TxInpoints{Idxs: [][]uint32{{1}}}); !errors.Is(err, model.ErrInvalidParameter) {
		t.Fatal("mismatch accepted")
	}
	if _, err := DecodeTxInpoints([]byte{0xff, 0xff, 0xff, 0x7f}); !errors.Is(err, model.ErrMalformed) {
		t.Fatal("hostile count accepted")
	}
	if _, err := DecodeTxInpoints(append(enc, 0)); !errors.Is(err, model.ErrMalformed) {
		t.Fatal("trailing accepted")
	}
}
