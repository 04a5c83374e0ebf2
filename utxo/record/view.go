package record

import (
	"bytes"
	"slices"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/engine"
	"github.com/utxostore/utxostore/utxo/model"
)

// View is a look at an encoded record that decodes its head (the fixed
// fields and block lists) and the few lists the spend rule consults, and
// leaves the rest where it is in the encoding: the outputs' slots, the
// conflicting children, the transaction and its inpoints. Reading one
// output reads its slot. The two operations of every transaction, spend
// and set-mined, run on a View: set-mined changes only the head, and a
// spend the head's counters and a few slots, so AppendPatch describes a
// spend as a patch of those bytes, and AppendEncode writes the head again
// and copies the rest. A View shares the bytes it was made from.
type View struct {
	// head holds the fixed fields, BlockIDs, BlockHeights, SubtreeIdxs,
	// DeletedChildren, UtxoSpendableIn and Reassignments; its other lists
	// are empty.
	head Record
	// hasTx is the record's hasTx flag: the transaction is in the tail.
	hasTx bool
	// encoded is the head as it was encoded; slots the outputs' slots;
	// lists the block lists as encoded; rest the tail after them.
	encoded, slots, lists, rest []byte
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
	rd, flags, slots, err := decodeHeader(b, &v.head)
	if err != nil {
		return View{}, err
	}
	v.hasTx = flags&flagHasTx != 0
	listsStart := rd.off
	decodeBlockLists(&rd, &v.head)
	listsEnd := rd.off
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
	if rd.err == nil && rd.remaining() != 0 {
		rd.fail("%d trailing bytes", rd.remaining())
	}
	if rd.err != nil {
		return View{}, rd.err
	}
	c, merr := countSlots(slots)
	if merr != nil {
		return View{}, merr
	}
	if err := v.head.validate(len(slots)/slotSize, c.stored, c.spent, c.frozen); err != nil {
		return View{}, err
	}
	v.encoded, v.slots, v.lists, v.rest = b[:headSize], slots, b[listsStart:listsEnd], b[listsEnd:]
	return v, nil
}

// InspectTx reads only the head (as View.Head has it) of the record encoded
// in b and the transaction's bytes it holds (nil when it holds none), shared
// with b, leaving its outputs unread: for a reader of the transaction's
// outputs and the blocks that mined it, not of its spend states.
func InspectTx(b []byte) (head Record, tx []byte, err error) {
	rd, flags, _, derr := decodeHeader(b, &head)
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
	// Grown once: a record of thousands of outputs would otherwise be
	// copied at every growth.
	dst = slices.Grow(dst, headSize+len(v.slots)+len(v.lists)+8+len(v.rest))
	dst = v.head.appendHead(dst, v.head.flags(v.hasTx), v.Outputs())
	slots := len(dst)
	dst = append(dst, v.slots...)
	for offset, at := range v.spentAt {
		if at != 0 {
			slot := dst[slots+offset*slotSize:]
			copy(slot, v.spent[at-1])
			slot[slotSize-1] = slotSpent
		}
	}
	dst = v.head.appendBlockLists(dst)
	return append(dst, v.rest...)
}

// AppendPatch describes the record as it is now as edits of the bytes the
// View was made from: the head's fields that changed and the slots
// SpendMulti spent. It appends the edits' bytes to dst and returns the
// edits, which share the returned buffer. ok is false when the change is
// more than a patch can say (set-mined changed the block lists): then
// AppendEncode writes the record.
func (v *View) AppendPatch(dst []byte) (buf []byte, edits []engine.Edit, ok bool) {
	start := len(dst)
	dst = v.head.appendBlockLists(dst)
	if !bytes.Equal(dst[start:], v.lists) {
		return dst[:start], nil, false
	}
	dst = v.head.appendHead(dst[:start], v.head.flags(v.hasTx), v.Outputs())
	head := dst[start:]
	lo := commonPrefix(head, v.encoded)
	var from []int // where in dst each edit's bytes start
	if lo < headSize {
		hi := headSize
		for head[hi-1] == v.encoded[hi-1] {
			hi--
		}
		dst = append(dst[:start], head[lo:hi]...)
		edits = append(edits, engine.Edit{Offset: lo, Bytes: make([]byte, hi-lo)})
		from = append(from, start)
	} else {
		dst = dst[:start]
	}
	for offset, at := range v.spentAt {
		if at == 0 {
			continue
		}
		from = append(from, len(dst))
		dst = append(dst, v.spent[at-1][UtxoHashSize:]...)
		dst = append(dst, slotSpent)
		edits = append(edits, engine.Edit{Offset: headSize + offset*slotSize + UtxoHashSize, Bytes: make([]byte, slotSize-UtxoHashSize)})
	}
	// The bytes are placed once dst stops growing.
	for i := range edits {
		n := len(edits[i].Bytes)
		edits[i].Bytes = dst[from[i] : from[i]+n : from[i]+n]
	}
	return dst, edits, true
}

// commonPrefix is how many bytes a and b share at their start.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// Outputs is the number of outputs the record holds (Record.Utxos).
func (v *View) Outputs() int { return len(v.slots) / slotSize }

// Entry returns the output at offset as Record.Utxos[offset] holds it: nil
// when it is not stored, or when offset is beyond the record's outputs.
// It shares the View's bytes.
func (v *View) Entry(offset uint32) Entry {
	if uint64(offset) >= uint64(v.Outputs()) {
		return nil
	}
	if e := v.spentEntry(offset); e != nil {
		return e
	}
	at := int(offset) * slotSize
	return slotEntry(v.slots[at : at+slotSize])
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
func (o viewOutputs) count() int             { return o.v.Outputs() }
func (o viewOutputs) spend(offset uint32, e Entry) {
	v := o.v
	if v.spentAt == nil {
		v.spentAt = make([]uint32, v.Outputs())
	}
	if at := v.spentAt[offset]; at != 0 {
		v.spent[at-1] = e
		return
	}
	v.spent = append(v.spent, e)
	v.spentAt[offset] = uint32(len(v.spent))
}
