package record

import (
	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// View is a read-only look at an encoded record: its fixed fields are
// decoded, its lists stay where they are in the encoding. Reading one
// output through a View costs no allocation and no decode of the others,
// which is what an operation that usually finds nothing to change needs
// (a block re-spending outputs its transactions spent when they were
// submitted). A View shares the bytes it was made from.
type View struct {
	// head holds the fixed fields (TxID to SpentUtxos and the flags) and
	// what the spend rule reads besides the outputs (DeletedChildren,
	// UtxoSpendableIn); its other lists are empty.
	head Record
	// entries is the utxos array after its count: nEntries tagged entries.
	entries  []byte
	nEntries int
}

// Inspect reads the fixed fields of the record encoded in b and finds its
// sections, checking the encoding's structure: lengths, counts, entry tags,
// no trailing bytes. It does not check the invariants across fields that
// Decode checks (Validate); a record it accepts may still be refused by
// Decode. Damage is CodeMalformed and an unknown format version
// CodeUnsupportedVersion, as with Decode; it never panics.
func Inspect(b []byte) (View, error) {
	var v View
	rd, flags, err := decodeHeader(b, &v.head)
	if err != nil {
		return View{}, err
	}
	for range 2 { // BlockIDs, BlockHeights
		for n := rd.count(1); n > 0; n-- {
			rd.u32()
		}
	}
	for n := rd.count(1); n > 0; n-- { // SubtreeIdxs
		rd.varint()
	}
	rd.take(rd.count(chainhash.HashSize) * chainhash.HashSize) // ConflictingChildren
	decodeSpendRules(&rd, flags, &v.head)
	for n := rd.count(2 + 2*chainhash.HashSize); n > 0; n-- { // Reassignments
		rd.u32()
		rd.take(2 * chainhash.HashSize)
		rd.u32()
	}
	if flags&flagHasTx != 0 {
		rd.bytesField()
	}
	rd.bytesField() // TxInpoints
	v.nEntries = rd.count(1)
	start := rd.off
	for range v.nEntries {
		rd.take(entrySize(rd.byte(), &rd))
	}
	if rd.err == nil && rd.remaining() != 0 {
		rd.fail("%d trailing bytes", rd.remaining())
	}
	if rd.err != nil {
		return View{}, rd.err
	}
	v.entries = b[start:]
	return v, nil
}

// entrySize is the number of bytes that follow an entry's tag; an unknown
// tag fails rd (when there is one).
func entrySize(tag byte, rd *reader) int {
	switch tag {
	case tagNotStored:
		return 0
	case tagUnspent, tagFrozen:
		return UtxoHashSize
	case tagSpent:
		return FullEntrySize
	}
	if rd != nil {
		rd.fail("unknown utxo entry tag %d", tag)
	}
	return 0
}

// TxID is the transaction the record belongs to.
func (v *View) TxID() chainhash.Hash { return v.head.TxID }

// Index is the record's index: 0 for the master.
func (v *View) Index() uint32 { return v.head.Index }

// Outputs is the number of outputs the record holds (Record.Utxos).
func (v *View) Outputs() int { return v.nEntries }

// Entry returns the output at offset as Record.Utxos[offset] holds it: nil
// when it is not stored, or when offset is beyond the record's outputs.
// Unspent and spent entries share the View's bytes; a frozen one is built.
func (v *View) Entry(offset uint32) Entry {
	if uint64(offset) >= uint64(v.nEntries) {
		return nil
	}
	// Inspect checked every tag and size, so the walk needs no checks.
	b := v.entries
	for range offset {
		b = b[1+entrySize(b[0], nil):]
	}
	switch b[0] {
	case tagUnspent:
		return Entry(b[1 : 1+UtxoHashSize : 1+UtxoHashSize])
	case tagSpent:
		return Entry(b[1 : 1+FullEntrySize : 1+FullEntrySize])
	case tagFrozen:
		return NewFrozenEntry(chainhash.Hash(b[1 : 1+UtxoHashSize]))
	}
	return nil
}

// SpendsUnchanged reports whether SpendMulti(items, opts) on the decoded
// record would succeed and leave it as it is: every item's output is
// already spent by that item's spending data, an idempotent re-spend.
// False means the spend would change the record or be refused; decoding
// it and calling SpendMulti then says how. The rules are SpendMulti's own.
func (v *View) SpendsUnchanged(items []SpendItem, opts SpendOptions) bool {
	if v.head.checkSpendable(opts) != nil {
		return false
	}
	for i := range items {
		it := &items[i]
		if takes, err := v.head.spendCheck(v.Entry(it.Offset), v.nEntries, it, opts.CurrentHeight); takes || err != nil {
			return false
		}
	}
	return true
}
