package chain

import (
	"bytes"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/wire"
)

// The real EF transaction decodes, has the txid of its file name (computed
// over the standard serialisation), and re-encodes byte-exact.
func TestParseEFRealTx(t *testing.T) {
	raw, txid := readEF(t)
	if !IsEF(raw) {
		t.Fatal("IsEF is false for the EF file")
	}
	ef, err := ParseEF(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := ef.TxID().String(); got != txid {
		t.Errorf("txid %s, file name %s", got, txid)
	}
	again, err := EncodeEF(ef)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, raw) {
		t.Error("EF re-encoding differs")
	}

	std := ef.StandardTx()
	if got := std.ID.String(); got != txid {
		t.Errorf("standard tx id %s, want %s", got, txid)
	}
	if doubleSHA256(std.Raw) != std.ID {
		t.Error("standard tx id is not the double SHA-256 of its bytes")
	}
	if IsEF(std.Raw) {
		t.Error("standard serialisation looks like EF")
	}
	reparsed, err := ParseTx(std.Raw)
	if err != nil || reparsed.ID != std.ID {
		t.Fatalf("standard bytes do not parse back: %v", err)
	}
	// EF carries more than the standard form: one previous output per input.
	if len(raw) <= len(std.Raw) || len(ef.PrevOutputs) != len(ef.Msg.TxIn) {
		t.Error("previous outputs missing")
	}
}

func TestParseEFErrors(t *testing.T) {
	raw, _ := readEF(t)
	if _, err := ParseEF(raw[:len(raw)-1]); !errors.Is(err, ErrTruncated) {
		t.Errorf("truncated: %v", err)
	}
	if _, err := ParseEF(append(raw[:len(raw):len(raw)], 0)); !errors.Is(err, ErrTrailingBytes) {
		t.Errorf("trailing: %v", err)
	}
	ef, _ := ParseEF(raw)
	if _, err := ParseEF(ef.StandardTx().Raw); !errors.Is(err, ErrNotExtendedFormat) {
		t.Errorf("standard tx: %v", err)
	}
	hostile := append(raw[:10:10], 0xff, 0, 0, 0, 0, 0, 0, 0, 0x10)
	if _, err := ParseEF(hostile); !errors.Is(err, ErrTruncated) {
		t.Errorf("2^60 inputs: %v", err)
	}
}

func TestEncodeEFErrors(t *testing.T) {
	msg := bigTx([]byte{0x51})
	if _, err := EncodeEF(&EFTx{Msg: msg}); !errors.Is(err, ErrPrevOutputCount) {
		t.Errorf("missing previous outputs: %v", err)
	}
	msg.TxIn[0].Witness = wire.TxWitness{{1}}
	if _, err := EncodeEF(&EFTx{Msg: msg, PrevOutputs: []*wire.TxOut{{Value: 1}}}); !errors.Is(err, ErrWitnessInEF) {
		t.Errorf("witness: %v", err)
	}
}
