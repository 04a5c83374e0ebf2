package chain

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
)

// Extended Format (BIP-239) carries, next to each input, the satoshis and
// locking script of the output it spends, so a validator can check scripts
// and fees without looking the parents up:
//
//	version(4) ‖ 00 00 00 00 00 EF ‖ CompactSize(nIn) ‖
//	  per input: prevTxid(32) prevIndex(4) CompactSize+unlockingScript sequence(4)
//	             prevSatoshis(8 LE) CompactSize+prevLockingScript ‖
//	CompactSize(nOut) ‖ outputs ‖ lockTime(4)
//
// The marker sits where a standard transaction has its input count; its
// first byte, 0x00, would be a zero input count, which no valid
// transaction has, so EF and standard bytes cannot be confused.

// efMarker follows the version in every Extended Format transaction.
var efMarker = [6]byte{0x00, 0x00, 0x00, 0x00, 0x00, 0xEF}

// minEFInputSize is a standard input (41) plus satoshis (8) and an empty
// previous locking script (1).
const minEFInputSize = minTxInSize + 9

// EFTx is a transaction in Extended Format: the transaction plus, for each
// input, the output it spends.
type EFTx struct {
	// Msg is the transaction itself (no witnesses: EF has none).
	Msg *wire.MsgTx
	// PrevOutputs[i] is the output spent by Msg.TxIn[i]: its Value in
	// satoshis and its PkScript (locking script).
	PrevOutputs []*wire.TxOut
}

// IsEF reports whether b starts like an Extended Format transaction.
func IsEF(b []byte) bool {
	return len(b) >= 10 && [6]byte(b[4:10]) == efMarker
}

// ParseEF decodes one Extended Format transaction; b must hold exactly one.
// Scripts alias b.
func ParseEF(b []byte) (*EFTx, error) {
	c := cursor{buf: b}
	fail := func(err error, at int, field string, args ...any) (*EFTx, error) {
		if len(args) > 0 {
			field = fmt.Sprintf(field, args...)
		}
		return nil, fieldErr(err, at, field)
	}
	version, err := c.uint32()
	if err != nil {
		return fail(err, 0, "version")
	}
	if !IsEF(b) {
		return fail(ErrNotExtendedFormat, 4, "EF marker")
	}
	c.off += len(efMarker)

	at := c.off
	numIn, err := c.count(minEFInputSize)
	if err != nil {
		return fail(err, at, "input count")
	}
	msg := &wire.MsgTx{Version: int32(version), TxIn: make([]*wire.TxIn, numIn)}
	ef := &EFTx{Msg: msg, PrevOutputs: make([]*wire.TxOut, numIn)}
	ins := make([]wire.TxIn, numIn)
	prevs := make([]wire.TxOut, numIn)
	for i := range ins {
		in, prev := &ins[i], &prevs[i]
		msg.TxIn[i], ef.PrevOutputs[i] = in, prev
		if err := c.txIn(in, i); err != nil {
			return nil, err
		}
		at = c.off
		satoshis, err := c.uint64()
		if err != nil {
			return fail(err, at, "input %d previous satoshis", i)
		}
		prev.Value = int64(satoshis)
		at = c.off
		if prev.PkScript, err = c.varBytes(); err != nil {
			return fail(err, at, "input %d previous locking script", i)
		}
	}

	if msg.TxOut, err = c.txOuts(); err != nil {
		return nil, err
	}
	at = c.off
	if msg.LockTime, err = c.uint32(); err != nil {
		return fail(err, at, "lock time")
	}
	if c.remaining() != 0 {
		return fail(ErrTrailingBytes, c.off, "end of transaction")
	}
	return ef, nil
}

// EncodeEF serialises tx in Extended Format.
func EncodeEF(tx *EFTx) ([]byte, error) {
	msg := tx.Msg
	if len(tx.PrevOutputs) != len(msg.TxIn) {
		return nil, fmt.Errorf("chain: EncodeEF: %d inputs, %d previous outputs: %w",
			len(msg.TxIn), len(tx.PrevOutputs), ErrPrevOutputCount)
	}
	if msg.HasWitness() {
		return nil, fmt.Errorf("chain: EncodeEF: %w", ErrWitnessInEF)
	}
	size := msg.SerializeSizeStripped() + len(efMarker)
	for _, prev := range tx.PrevOutputs {
		size += prev.SerializeSize()
	}
	b := make([]byte, 0, size)
	b = binary.LittleEndian.AppendUint32(b, uint32(msg.Version))
	b = append(b, efMarker[:]...)
	b = AppendCompactSize(b, uint64(len(msg.TxIn)))
	for i, in := range msg.TxIn {
		b = append(b, in.PreviousOutPoint.Hash[:]...)
		b = binary.LittleEndian.AppendUint32(b, in.PreviousOutPoint.Index)
		b = appendVarBytes(b, in.SignatureScript)
		b = binary.LittleEndian.AppendUint32(b, in.Sequence)
		b = appendTxOut(b, tx.PrevOutputs[i])
	}
	b = AppendCompactSize(b, uint64(len(msg.TxOut)))
	for _, out := range msg.TxOut {
		b = appendTxOut(b, out)
	}
	b = binary.LittleEndian.AppendUint32(b, msg.LockTime)
	return b, nil
}

// TxID is the txid, which BIP-239 defines over the standard serialisation,
// not over the EF bytes.
func (e *EFTx) TxID() chainhash.Hash { return e.Msg.TxHash() }

// StandardTx converts to the standard serialisation (dropping the previous
// outputs), e.g. to store or relay to a node that does not speak EF.
func (e *EFTx) StandardTx() *Tx {
	var buf bytes.Buffer
	buf.Grow(e.Msg.SerializeSizeStripped())
	_ = e.Msg.SerializeNoWitness(&buf) // bytes.Buffer writes cannot fail
	raw := buf.Bytes()
	return &Tx{Msg: e.Msg, Raw: raw, ID: chainhash.DoubleHashH(raw)}
}

func appendVarBytes(b, data []byte) []byte {
	return append(AppendCompactSize(b, uint64(len(data))), data...)
}

func appendTxOut(b []byte, out *wire.TxOut) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(out.Value))
	return appendVarBytes(b, out.PkScript)
}
