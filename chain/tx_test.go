package chain

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
)

// bigTx builds a transaction with one input and the given output scripts.
func bigTx(scripts ...[]byte) *wire.MsgTx {
	msg := wire.NewMsgTx(1)
	msg.AddTxIn(wire.NewTxIn(wire.NewOutPoint(&chainhash.Hash{1}, 7), []byte{0x51}, nil))
	for i, s := range scripts {
		msg.AddTxOut(wire.NewTxOut(int64(i), s))
	}
	return msg
}

// parseBothWays parses raw with ParseTx and as the only transaction of a
// streamed block, checks both agree and re-serialise to raw, and returns
// the parsed Tx.
func parseBothWays(t *testing.T, raw []byte) *Tx {
	t.Helper()
	tx, err := ParseTx(raw)
	if err != nil {
		t.Fatalf("ParseTx: %v", err)
	}
	if !bytes.Equal(SerializeTx(tx.Msg), raw) {
		t.Fatal("re-serialisation differs")
	}
	if tx.ID != tx.Msg.TxHash() {
		t.Fatal("txid differs from wire's TxHash")
	}
	block := make([]byte, HeaderSize, HeaderSize+1+len(raw))
	block = append(AppendCompactSize(block, 1), raw...)
	txs, err := readAllStreamed(block)
	if err != nil || len(txs) != 1 {
		t.Fatalf("BlockReader: %d txs, %v", len(txs), err)
	}
	if txs[0].ID != tx.ID || !bytes.Equal(txs[0].Raw, raw) {
		t.Fatal("streamed tx differs")
	}
	return tx
}

// A transaction larger than Bitcoin's 4 MB block, with one script above
// wire's 4,000,000-byte item limit, parses; wire itself refuses it.
func TestParseTxLargerThan4MB(t *testing.T) {
	script := bytes.Repeat([]byte{0x6a}, 5_000_000)
	raw := SerializeTx(bigTx(script))
	if len(raw) <= 4_000_000 {
		t.Fatalf("test tx is only %d bytes", len(raw))
	}
	tx := parseBothWays(t, raw)
	if len(tx.Msg.TxOut[0].PkScript) != len(script) {
		t.Fatal("script length lost")
	}
	if err := new(wire.MsgTx).Deserialize(bytes.NewReader(raw)); err == nil {
		t.Log("note: btcd wire now accepts >4 MB scripts; decode.go's rationale may be outdated")
	}
}

// Scripts adding up to more than wire's 4 MiB slab (each one under its
// per-item limit) parse; this is the shape that makes wire v0.24.2 panic.
func TestParseTxScriptsAbove4MiBTotal(t *testing.T) {
	chunk := bytes.Repeat([]byte{0xab}, 3_000_000)
	raw := SerializeTx(bigTx(chunk, chunk))
	parseBothWays(t, raw)

	panicked := func() (p bool) {
		defer func() { p = recover() != nil }()
		_ = new(wire.MsgTx).Deserialize(bytes.NewReader(raw))
		return false
	}()
	t.Logf("btcd wire Deserialize panics on this transaction: %v", panicked)
}

// 100,001 outputs parse, streamed and whole.
func TestParseTx100001Outputs(t *testing.T) {
	scripts := make([][]byte, 100_001)
	for i := range scripts {
		scripts[i] = []byte{0x76, 0xa9, byte(i), byte(i >> 8)}
	}
	tx := parseBothWays(t, SerializeTx(bigTx(scripts...)))
	if len(tx.Msg.TxOut) != 100_001 {
		t.Fatalf("%d outputs", len(tx.Msg.TxOut))
	}
}

// A segwit transaction keeps its witness bytes, and its txid excludes them.
func TestParseSegwitTx(t *testing.T) {
	msg := bigTx([]byte{0x00, 0x14, 1, 2, 3})
	msg.AddTxIn(wire.NewTxIn(wire.NewOutPoint(&chainhash.Hash{2}, 0), nil, nil))
	msg.TxIn[1].Witness = wire.TxWitness{{0x30, 0x44}, {}, {0x02, 0x03}}
	raw := SerializeTx(msg)
	if raw[4] != 0 || raw[5] != 1 {
		t.Fatal("test tx is not in witness serialisation")
	}
	tx := parseBothWays(t, raw)
	var stripped bytes.Buffer
	_ = msg.SerializeNoWitness(&stripped)
	if tx.ID != doubleSHA256(stripped.Bytes()) {
		t.Error("segwit txid is not the hash of the stripped serialisation")
	}
	if len(tx.Msg.TxIn[0].Witness) != 0 || len(tx.Msg.TxIn[1].Witness) != 3 {
		t.Error("witness stacks not restored")
	}
}

func TestParseTxErrors(t *testing.T) {
	valid := SerializeTx(bigTx([]byte{0x51}))
	cases := []struct {
		name  string
		hex   string
		raw   []byte
		want  error
		field string
	}{
		{name: "empty", hex: "", want: ErrTruncated, field: "version"},
		{name: "no input count", hex: "01000000", want: ErrTruncated, field: "input count"},
		{name: "2^60 inputs", hex: "01000000" + "ff0000000000000010" + "00000000", want: ErrTruncated, field: "input count"},
		{name: "non-canonical count", hex: "01000000" + "fd0100", want: ErrNonCanonicalVarInt, field: "input count"},
		{name: "script longer than tx", hex: "01000000" + "01" + hex.EncodeToString(make([]byte, 36)) + "fe00000001" + "00", want: ErrTruncated, field: "input 0 unlocking script"},
		{name: "segwit flag without witness", hex: "01000000" + "0001" + "01" + hex.EncodeToString(make([]byte, 36)) + "00" + "ffffffff" + "00" + "00" + "00000000", want: ErrSuperfluousWitness, field: "witness"},
		{name: "trailing byte", raw: append(valid[:len(valid):len(valid)], 0), want: ErrTrailingBytes, field: "end of transaction"},
		{name: "missing lock time", raw: valid[:len(valid)-1], want: ErrTruncated, field: "lock time"},
	}
	for _, c := range cases {
		raw := c.raw
		if raw == nil {
			raw, _ = hex.DecodeString(c.hex)
		}
		_, err := ParseTx(raw)
		var pe *ParseError
		if !errors.Is(err, c.want) || !errors.As(err, &pe) || pe.Field != c.field {
			t.Errorf("%s: got %v, want %v in field %q", c.name, err, c.want, c.field)
		}
	}
}

// "00 00" after the version is zero inputs and zero outputs, as Bitcoin
// Core reads it, not a broken segwit flag as wire reads it.
func TestZeroInputsZeroOutputs(t *testing.T) {
	raw, _ := hex.DecodeString("01000000" + "00" + "00" + "00000000")
	tx := parseBothWays(t, raw)
	if len(tx.Msg.TxIn) != 0 || len(tx.Msg.TxOut) != 0 {
		t.Errorf("got %d inputs, %d outputs", len(tx.Msg.TxIn), len(tx.Msg.TxOut))
	}
}

func TestNewTx(t *testing.T) {
	msg := bigTx([]byte{0x51})
	tx := NewTx(msg)
	if tx.ID != msg.TxHash() || tx.Size() != msg.SerializeSize() {
		t.Error("NewTx disagrees with wire")
	}
}
