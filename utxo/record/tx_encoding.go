package record

import (
	"encoding/binary"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// ExtendedInput is a transaction input in Extended Format (BIP-239), the
// form the reference stores a transaction in: the standard input plus the
// satoshis and locking script of the output it spends, so a validator
// needs no parent lookup.
type ExtendedInput struct {
	PreviousTxID       chainhash.Hash
	PreviousTxOutIndex uint32
	ScriptSig          []byte
	Sequence           uint32
	PreviousTxSatoshis uint64
	// PreviousTxScript: nil and empty both encode as a single 0x00 and
	// decode as nil.
	PreviousTxScript []byte
}

// AppendTo appends the encoding (CompactSize = Bitcoin varint):
//
//	[32] PreviousTxID ‖ LE u32 PreviousTxOutIndex ‖ CompactSize len ‖ ScriptSig ‖
//	LE u32 Sequence ‖ LE u64 PreviousTxSatoshis ‖ CompactSize len ‖ PreviousTxScript
func (in *ExtendedInput) AppendTo(dst []byte) []byte {
	dst = append(dst, in.PreviousTxID[:]...)
	dst = binary.LittleEndian.AppendUint32(dst, in.PreviousTxOutIndex)
	dst = appendCompactSize(dst, uint64(len(in.ScriptSig)))
	dst = append(dst, in.ScriptSig...)
	dst = binary.LittleEndian.AppendUint32(dst, in.Sequence)
	dst = binary.LittleEndian.AppendUint64(dst, in.PreviousTxSatoshis)
	dst = appendCompactSize(dst, uint64(len(in.PreviousTxScript)))
	return append(dst, in.PreviousTxScript...)
}

// Bytes returns the encoding (see AppendTo).
func (in *ExtendedInput) Bytes() []byte { return in.AppendTo(nil) }

// DecodeExtendedInput parses exactly one extended input. Scripts are copied.
func DecodeExtendedInput(b []byte) (ExtendedInput, error) {
	r := reader{b: b}
	in := r.extendedInput()
	return in, r.finish("extended input")
}

func (r *reader) extendedInput() ExtendedInput {
	var in ExtendedInput
	in.PreviousTxID = r.hash()
	in.PreviousTxOutIndex = r.u32le()
	in.ScriptSig = cloneOrNil(r.compactBytes())
	in.Sequence = r.u32le()
	in.PreviousTxSatoshis = r.u64le()
	in.PreviousTxScript = cloneOrNil(r.compactBytes())
	return in
}

// Output is a transaction output in standard Bitcoin serialization.
type Output struct {
	Satoshis      uint64
	LockingScript []byte
}

// AppendTo appends LE u64 Satoshis ‖ CompactSize len ‖ LockingScript.
func (o *Output) AppendTo(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, o.Satoshis)
	dst = appendCompactSize(dst, uint64(len(o.LockingScript)))
	return append(dst, o.LockingScript...)
}

// Bytes returns the encoding (see AppendTo).
func (o *Output) Bytes() []byte { return o.AppendTo(nil) }

// DecodeOutput parses exactly one output. An empty script decodes as nil.
func DecodeOutput(b []byte) (Output, error) {
	r := reader{b: b}
	o := Output{Satoshis: r.u64le(), LockingScript: cloneOrNil(r.compactBytes())}
	return o, r.finish("output")
}

// finish reports the first error, or trailing bytes, as MALFORMED.
func (r *reader) finish(what string) error {
	if r.err == nil && r.remaining() != 0 {
		r.fail("%s: %d trailing bytes", what, r.remaining())
	}
	if r.err != nil {
		return r.err
	}
	return nil
}

func cloneOrNil(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}
