package chain

import (
	"fmt"

	"github.com/btcsuite/btcd/wire"
)

// Why this package decodes transactions itself instead of calling
// wire.MsgTx.Deserialize (btcd v0.24.2):
//
//   - wire rejects any script or witness item longer than 4,000,000 bytes
//     (maxWitnessItemSize). BSV has no script size limit since Genesis;
//     100 MB data outputs exist.
//   - wire caps a transaction at 32 MiB / 41 inputs and 32 MiB / 9 outputs
//     (maxTxInPerMessage, maxTxOutPerMessage), i.e. about 818k inputs and
//     3.7M outputs; a legal BSV transaction can exceed both.
//   - wire copies every script through one pooled 4 MiB slab
//     (scriptSlabSize = 1<<22). When the scripts of a single transaction add
//     up to more than that, it slices past the slab and panics; a hostile
//     or merely large BSV transaction would crash the process.
//   - wire reads a zero input count followed by any byte other than 0x01 as
//     a broken segwit flag; Bitcoin Core and BSV accept e.g. "00 00" as zero
//     inputs and zero outputs.
//
// The serialisation is small and stable, so the decoder below reads it from
// a byte slice and fills an ordinary *wire.MsgTx, which keeps the rest of
// btcd (serialisation, txscript, ...) usable. Scripts alias the input
// bytes, which is why a parsed Tx keeps its Raw bytes alive.
//
// Segwit: a zero input count followed by the byte 0x01 is read as the
// BIP-144 marker and flag, exactly as Bitcoin Core does. BSV never produces
// that shape (a zero-input transaction is invalid on every chain), so the
// ambiguity does not arise with valid data.

const (
	// minTxInSize is an outpoint (36), an empty script length (1) and a
	// sequence (4).
	minTxInSize = 41
	// minTxOutSize is a value (8) and an empty script length (1).
	minTxOutSize = 9
	// minTxSize is a version, two zero counts and a lock time.
	minTxSize = 10
)

// txLayout records where a decoded transaction's parts lie in its bytes.
type txLayout struct {
	// size is the number of bytes the transaction occupies.
	size int
	// witnessStart is the offset of the first witness stack, or 0 when the
	// transaction uses the standard (non-witness) serialisation. The txid
	// is computed over the bytes outside the marker, flag and witnesses.
	witnessStart int
}

// decodeTx decodes the transaction at the start of b. Bytes after it are
// left alone (the caller decides whether they are an error). Errors are
// *ParseError with offsets relative to b.
func decodeTx(b []byte) (*wire.MsgTx, txLayout, error) {
	c := cursor{buf: b}
	msg := &wire.MsgTx{}
	fail := func(err error, at int, field string, args ...any) (*wire.MsgTx, txLayout, error) {
		if len(args) > 0 {
			field = fmt.Sprintf(field, args...)
		}
		return nil, txLayout{}, fieldErr(err, at, field)
	}

	version, err := c.uint32()
	if err != nil {
		return fail(err, 0, "version")
	}
	msg.Version = int32(version)

	at := c.off
	numIn, err := c.count(minTxInSize)
	if err != nil {
		return fail(err, at, "input count")
	}
	segwit := false
	if numIn == 0 && c.remaining() > 0 && c.buf[c.off] == wire.WitnessFlag {
		segwit = true
		c.off++
		at = c.off
		if numIn, err = c.count(minTxInSize); err != nil {
			return fail(err, at, "input count")
		}
	}

	// One backing array for all inputs (and one for outputs), as wire does,
	// to keep the allocation count per transaction constant.
	ins := make([]wire.TxIn, numIn)
	msg.TxIn = make([]*wire.TxIn, numIn)
	for i := range ins {
		in := &ins[i]
		msg.TxIn[i] = in
		if err := c.txIn(in, i); err != nil {
			return nil, txLayout{}, err
		}
	}

	if msg.TxOut, err = c.txOuts(); err != nil {
		return nil, txLayout{}, err
	}

	layout := txLayout{}
	if segwit {
		layout.witnessStart = c.off
		for i, in := range msg.TxIn {
			at = c.off
			items, err := c.count(1)
			if err != nil {
				return fail(err, at, "input %d witness item count", i)
			}
			if items == 0 {
				continue
			}
			in.Witness = make(wire.TxWitness, items)
			for j := range in.Witness {
				at = c.off
				if in.Witness[j], err = c.varBytes(); err != nil {
					return fail(err, at, "input %d witness item %d", i, j)
				}
			}
		}
		if !msg.HasWitness() {
			return fail(ErrSuperfluousWitness, layout.witnessStart, "witness")
		}
	}

	at = c.off
	if msg.LockTime, err = c.uint32(); err != nil {
		return fail(err, at, "lock time")
	}
	layout.size = c.off
	return msg, layout, nil
}
