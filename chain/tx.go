package chain

import (
	"bytes"
	"crypto/sha256"
	"fmt"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
)

// Tx is a parsed transaction together with the exact bytes it was parsed
// from. Keeping both means the store can persist or forward Raw without
// re-serialising, and the txid is computed once.
//
// Msg's scripts alias Raw: neither may be modified while the other is in
// use. Build a new Tx with [NewTx] after changing Msg.
type Tx struct {
	// Msg is the decoded transaction.
	Msg *wire.MsgTx
	// Raw is the transaction's serialisation as read: the witness
	// serialisation (BIP-144) if it had witnesses, else the standard one.
	Raw []byte
	// ID is the txid: double SHA-256 of the standard (non-witness)
	// serialisation, in internal byte order (reverse of the usual hex).
	ID chainhash.Hash
}

// ParseTx parses a whole serialised transaction. raw must contain exactly
// one transaction; trailing bytes are an error, because they would be lost
// by anyone who stores Msg instead of Raw. The returned Tx aliases raw.
func ParseTx(raw []byte) (*Tx, error) {
	tx, err := parseTxPrefix(raw)
	if err != nil {
		return nil, err
	}
	if len(tx.Raw) != len(raw) {
		return nil, fieldErr(ErrTrailingBytes, len(tx.Raw), "end of transaction")
	}
	return tx, nil
}

// parseTxPrefix parses the transaction at the start of b; Raw is the prefix
// of b it occupies.
func parseTxPrefix(b []byte) (*Tx, error) {
	msg, layout, err := decodeTx(b)
	if err != nil {
		return nil, err
	}
	raw := b[:layout.size:layout.size]
	return &Tx{Msg: msg, Raw: raw, ID: txIDFromRaw(raw, layout.witnessStart)}, nil
}

// NewTx serialises msg (with witnesses if it has any) and wraps it as a Tx.
// Use it for transactions built or modified in memory.
func NewTx(msg *wire.MsgTx) *Tx {
	raw := SerializeTx(msg)
	return &Tx{Msg: msg, Raw: raw, ID: msg.TxHash()}
}

// SerializeTx returns msg's serialisation: the witness form when any input
// has witness data, else the standard form (the same choice Bitcoin Core
// makes). wire's encoder has no size caps, so it is used as is.
func SerializeTx(msg *wire.MsgTx) []byte {
	var buf bytes.Buffer
	buf.Grow(msg.SerializeSize())
	_ = msg.Serialize(&buf) // writing to a bytes.Buffer cannot fail
	return buf.Bytes()
}

// Size is the length of the transaction's serialisation in bytes.
func (t *Tx) Size() int { return len(t.Raw) }

// IsCoinbase reports whether the transaction is a coinbase: exactly one
// input, spending the null outpoint.
func (t *Tx) IsCoinbase() bool {
	if len(t.Msg.TxIn) != 1 {
		return false
	}
	prev := t.Msg.TxIn[0].PreviousOutPoint
	return prev.Index == wire.MaxPrevOutIndex && prev.Hash == chainhash.Hash{}
}

// txIDFromRaw hashes the standard serialisation without materialising it:
// for a witness serialisation that is the version, the bytes between the
// marker/flag and the witnesses, and the lock time.
func txIDFromRaw(raw []byte, witnessStart int) chainhash.Hash {
	if witnessStart == 0 {
		return chainhash.DoubleHashH(raw)
	}
	h := sha256.New()
	h.Write(raw[:4])
	h.Write(raw[6:witnessStart]) // skip marker 0x00 and flag 0x01
	h.Write(raw[len(raw)-4:])
	var first [sha256.Size]byte
	return chainhash.Hash(sha256.Sum256(h.Sum(first[:0])))
}

// TxOutput reads output vout of the serialised transaction raw without
// decoding the rest: its value and its locking script, which aliases raw.
func TxOutput(raw []byte, vout uint32) (value uint64, script []byte, err error) {
	c := cursor{buf: raw}
	if _, err := c.uint32(); err != nil {
		return 0, nil, fieldErr(err, 0, "version")
	}
	at := c.off
	numIn, err := c.count(minTxInSize)
	if err != nil {
		return 0, nil, fieldErr(err, at, "input count")
	}
	if numIn == 0 && c.remaining() > 0 && c.buf[c.off] == wire.WitnessFlag {
		c.off++
		at = c.off
		if numIn, err = c.count(minTxInSize); err != nil {
			return 0, nil, fieldErr(err, at, "input count")
		}
	}
	var in wire.TxIn
	for i := range numIn {
		if err := c.txIn(&in, i); err != nil {
			return 0, nil, err
		}
	}
	at = c.off
	numOut, err := c.count(minTxOutSize)
	if err != nil {
		return 0, nil, fieldErr(err, at, "output count")
	}
	if int(vout) >= numOut {
		return 0, nil, fmt.Errorf("chain: the transaction has %d outputs, not output %d", numOut, vout)
	}
	for i := 0; ; i++ {
		at = c.off
		if value, err = c.uint64(); err != nil {
			return 0, nil, fieldErr(err, at, fmt.Sprintf("output %d value", i))
		}
		at = c.off
		if script, err = c.varBytes(); err != nil {
			return 0, nil, fieldErr(err, at, fmt.Sprintf("output %d locking script", i))
		}
		if i == int(vout) {
			return value, script, nil
		}
	}
}

// DuplicateInput finds two inputs of tx that spend the same output, which
// no valid transaction has (Bitcoin Core's CheckTransaction refuses it as
// bad-txns-inputs-duplicate). It returns the first such pair, by the
// second input's index.
func DuplicateInput(tx *wire.MsgTx) (first, second int, found bool) {
	if len(tx.TxIn) <= duplicateScan {
		// A handful of inputs: comparing pairs is cheaper than a map.
		for second, in := range tx.TxIn {
			for first := range second {
				if tx.TxIn[first].PreviousOutPoint == in.PreviousOutPoint {
					return first, second, true
				}
			}
		}
		return 0, 0, false
	}
	firstInput := make(map[wire.OutPoint]int, len(tx.TxIn))
	for second, in := range tx.TxIn {
		if first, seen := firstInput[in.PreviousOutPoint]; seen {
			return first, second, true
		}
		firstInput[in.PreviousOutPoint] = second
	}
	return 0, 0, false
}

// duplicateScan is the number of inputs up to which DuplicateInput
// compares pairs rather than filling a map.
const duplicateScan = 16
