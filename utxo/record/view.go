package record

import (
	"slices"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/utxo/model"
)

// View is a look at an encoded record that decodes its head (the fixed
// fields and block lists) and the few lists the spend rule consults, and
// leaves the rest where it is in the encoding: the conflicting children,
// the transaction, its inpoints and the outputs. Reading one output costs
// no decode of the others. The two operations of every transaction, spend
// and set-mined, run on a View: set-mined changes only the head, and a
// spend the head and a few outputs, so encoding the View again re-encodes
// the head, writes the spent outputs and copies the rest as it is. A View
// shares the bytes it was made from.
type View struct {
	// head holds the fixed fields, BlockIDs, BlockHeights, SubtreeIdxs,
	// DeletedChildren, UtxoSpendableIn and Reassignments; its other lists
	// are empty.
	head Record
	// hasTx is the record's hasTx flag: the transaction is in the tail.
	hasTx bool
	// tail is the encoding from ConflictingChildren to the end.
	tail []byte
	// entries is the utxos array after its count: nEntries tagged entries.
	entries  []byte
	nEntries int
	// starts holds where each entry starts in entries; it is built at the
	// first lookup of an output, so that reading many costs one walk.
	starts []uint32
	// spent holds the entries SpendMulti put in place of encoded ones,
	// and spentAt, by offset, 1 + the index of an offset's entry in spent
	// (0 where it spent nothing); nil until it spends. Offsets index
	// spent rather than hold its entries so that a record of thousands of
	// outputs, one of them spent, costs a table of small integers, not
	// one of pointers that the garbage collector scans.
	spent   []Entry
	spentAt []uint32
}

// spentEntry is the entry SpendMulti put at offset, nil if none.
func (v *View) spentEntry(offset uint32) Entry {
	if v.spentAt == nil || v.spentAt[offset] == 0 {
		return nil
	}
	return v.spent[v.spentAt[offset]-1]
}

// Inspect reads the record encoded in b into a View. It accepts exactly
// what Decode accepts: damage is CodeMalformed and an unknown format
// version CodeUnsupportedVersion, and it never panics.
func Inspect(b []byte) (View, error) {
	var v View
	rd, flags, err := decodeHeader(b, &v.head)
	if err != nil {
		return View{}, err
	}
	v.hasTx = flags&flagHasTx != 0
	decodeBlockLists(&rd, &v.head)
	tailStart := rd.off
	rd.take(rd.count(chainhash.HashSize) * chainhash.HashSize) // ConflictingChildren
	decodeSpendRules(&rd, flags, &v.head)
	decodeReassignments(&rd, &v.head)
	if v.hasTx {
		rd.bytesField()
	}
	if inp := rd.bytesField(); len(inp) > 0 {
		if err := checkTxInpoints(inp); err != nil && rd.err == nil {
			rd.err = err
		}
	}
	v.nEntries = rd.count(1)
	start := rd.off
	var stored, spent uint32
	frozen := false
	for range v.nEntries {
		tag := rd.byte()
		e := rd.take(entrySize(tag, &rd))
		switch {
		case rd.err != nil:
		case tag == tagFrozen || tag == tagSpent && Entry(e).IsFrozen():
			stored++
			frozen = true
		case tag == tagSpent:
			stored++
			spent++
		case tag == tagUnspent:
			stored++
		}
	}
	if rd.err == nil && rd.remaining() != 0 {
		rd.fail("%d trailing bytes", rd.remaining())
	}
	if rd.err != nil {
		return View{}, rd.err
	}
	if err := v.head.validate(v.nEntries, stored, spent, frozen); err != nil {
		return View{}, err
	}
	v.tail, v.entries = b[tailStart:], b[start:]
	return v, nil
}

// InspectTx reads only the head (as View.Head has it) of the record encoded
// in b and the transaction's bytes it holds (nil when it holds none), shared
// with b, leaving its outputs unread: for a reader of the transaction's
// outputs and the blocks that mined it, not of its spend states.
func InspectTx(b []byte) (head Record, tx []byte, err error) {
	rd, flags, derr := decodeHeader(b, &head)
	if derr != nil {
		return Record{}, nil, derr
	}
	decodeBlockLists(&rd, &head)
	rd.take(rd.count(chainhash.HashSize) * chainhash.HashSize) // ConflictingChildren
	decodeSpendRules(&rd, flags, &head)
	decodeReassignments(&rd, &head)
	if flags&flagHasTx != 0 {
		tx = rd.bytesField()
	}
	if rd.err != nil {
		return Record{}, nil, rd.err
	}
	return head, tx, nil
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

// Head returns the record less what the View leaves encoded: its
// ConflictingChildren, Tx, TxInpoints and Utxos are empty. It is the
// View's own: what changes it changes the View.
func (v *View) Head() *Record { return &v.head }

// SetMined is Record.SetMined on the head, the only part of a record it
// reads or changes.
func (v *View) SetMined(info model.MinedBlockInfo, currentHeight, retention uint32) Signal {
	return v.head.SetMined(info, currentHeight, retention)
}

// AppendEncode appends the encoding of the record as it is now, its head
// and outputs, to dst: Record.AppendEncode's bytes for the decoded record.
func (v *View) AppendEncode(dst []byte) []byte {
	dst = v.head.appendHead(dst, v.head.flags(v.hasTx))
	// Grown once: the rest is appended piece by piece, and a record of
	// thousands of outputs would otherwise be copied at every growth.
	dst = slices.Grow(dst, len(v.tail)+len(v.spent)*(FullEntrySize-UtxoHashSize))
	if v.spentAt == nil {
		return append(dst, v.tail...)
	}
	// The encoding up to the outputs, then each spent output in place of
	// its encoded entry, with the entries between them copied whole.
	dst = append(dst, v.tail[:len(v.tail)-len(v.entries)]...)
	from := uint32(0) // the first entry byte not yet copied
	for offset, at := range v.spentAt {
		if at == 0 {
			continue
		}
		e := v.spent[at-1]
		start := v.start(uint32(offset))
		dst = append(dst, v.entries[from:start]...)
		dst = append(append(dst, tagSpent), e...)
		from = start + 1 + uint32(entrySize(v.entries[start], nil))
	}
	return append(dst, v.entries[from:]...)
}

// start is where the entry at offset (< nEntries) starts in entries.
func (v *View) start(offset uint32) uint32 {
	if v.starts == nil {
		// Inspect checked every tag and size, so the walk needs no checks.
		v.starts = make([]uint32, v.nEntries)
		pos := uint32(0)
		for i := range v.starts {
			v.starts[i] = pos
			pos += 1 + uint32(entrySize(v.entries[pos], nil))
		}
	}
	return v.starts[offset]
}

// Outputs is the number of outputs the record holds (Record.Utxos).
func (v *View) Outputs() int { return v.nEntries }

// Entry returns the output at offset as Record.Utxos[offset] holds it: nil
// when it is not stored, or when offset is beyond the record's outputs.
// Unspent and spent entries share the View's bytes; a frozen one is built.
func (v *View) Entry(offset uint32) Entry {
	if uint64(offset) >= uint64(v.nEntries) {
		return nil
	}
	if e := v.spentEntry(offset); e != nil {
		return e
	}
	b := v.entries[v.start(offset):]
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

// SpendMulti is Record.SpendMulti on the record the View shows: the same
// rule, run on the head and the outputs the items name, with the same
// outcome; AppendEncode then writes the record SpendMulti left.
func (v *View) SpendMulti(items []SpendItem, opts SpendOptions) (sig Signal, itemErrs []error, err error) {
	v.spent = slices.Grow(v.spent, len(items))
	return v.head.spendMulti(viewOutputs{v}, items, opts)
}

// viewOutputs are a View's outputs.
type viewOutputs struct{ v *View }

func (o viewOutputs) at(offset uint32) Entry { return o.v.Entry(offset) }
func (o viewOutputs) count() int             { return o.v.nEntries }
func (o viewOutputs) spend(offset uint32, e Entry) {
	v := o.v
	if v.spentAt == nil {
		v.spentAt = make([]uint32, v.nEntries)
	}
	if at := v.spentAt[offset]; at != 0 {
		v.spent[at-1] = e
		return
	}
	v.spent = append(v.spent, e)
	v.spentAt[offset] = uint32(len(v.spent))
}
