package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/utxo/model"
)

// FormatVersion is the first byte of every encoded record. Decode refuses
// any other value with CodeUnsupportedVersion, so a store written by a newer
// build is never misread by an older one.
const FormatVersion = 2

// Record flags (a little-endian uint16).
const (
	flagFrozen uint64 = 1 << iota
	flagLocked
	flagCreating
	flagConflicting
	flagExternal
	flagCoinbase
	flagHasTx
	flagHasDeletedChildren
	flagOutputsOnly
	flagsKnown = flagOutputsOnly<<1 - 1
)

// The fixed-width layout: the head, then one slot per output.
const (
	// headSize is the fixed head's size, from the format version to the
	// slot count.
	headSize = 1 + 2 + chainhash.HashSize + 4*4 + 2*8 + 2*4 + 8 + 7*4 + 4
	// slotSize is one output's slot: the UTXO hash, the spending data
	// (zero until spent) and the slot's state, last, so that a spend
	// writes one range of SpendingDataSize+1 bytes.
	slotSize = UtxoHashSize + SpendingDataSize + 1
)

// Slot states, the last byte of a slot.
const (
	slotNotStored = 0 // every byte of the slot is zero
	slotUnspent   = 1 // the hash, then zero spending data
	slotSpent     = 2 // the hash and the spending data: a spender's, or the freeze marker
	slotInvalid   = 0xff
)

// Encode serializes the record in format version 2: a fixed-width head and
// one fixed-width slot per output, so that a spend patches a slot and a
// counter in place (View.AppendPatch), then a tail of the variable-length
// fields. Fixed fields are little-endian; tail integers are unsigned LEB128
// varints (SubtreeIdxs zig-zag):
//
//	u8      FormatVersion (2)
//	u16     flags: frozen|locked<<1|creating<<2|conflicting<<3|external<<4|coinbase<<5|hasTx<<6|
//	        hasDeletedChildren<<7|outputsOnly<<8
//	[32]    TxID
//	u32     Index, FirstVout, Version, LockTime
//	u64     Fee, SizeInBytes
//	u32     SpendingHeight, UnminedSince
//	i64     CreatedAt
//	u32     PreserveUntil, DeleteAtHeight, TotalUtxos, TotalExtraRecs, SpentExtraRecs,
//	        RecordUtxos, SpentUtxos
//	u32     n, then n × slot: [32] utxoHash, [36] spending data, u8 state
//	        (not stored 0, unspent 1, spent or frozen 2)
//	tail:   n, n × BlockID;  n, n × BlockHeight;  n, n × SubtreeIdx (zig-zag)
//	        n, n × [32] ConflictingChildren
//	        n, n × [32] DeletedChildren           (only when hasDeletedChildren)
//	        n, n × (offset, height) UtxoSpendableIn, ascending offset
//	        n, n × (offset, [32] utxoHash, [32] newUtxoHash, blockHeight) Reassignments
//	        len, Tx bytes                        (only when hasTx)
//	        len, TxInpoints (go-subtree layout)  (len 0 when empty)
//
// The record should satisfy Validate; an entry of an illegal size is
// written with a state Decode rejects, never silently dropped.
func (r *Record) Encode() []byte {
	return r.AppendEncode(nil)
}

func (r *Record) encodedSizeHint() int {
	return headSize + slotSize*len(r.Utxos) + 40 + len(r.Tx) + len(r.keptInpoints) + 36*len(r.ConflictingChildren) + 32*len(r.DeletedChildren) + 12*len(r.BlockIDs) +
		10*len(r.UtxoSpendableIn) + 76*len(r.Reassignments) + txInpointsSize(r.TxInpoints) + 10
}

// AppendEncode appends the encoding of r to dst (see Encode), growing dst
// once: a record of thousands of outputs would otherwise be copied at
// every growth.
func (r *Record) AppendEncode(dst []byte) []byte {
	dst = slices.Grow(dst, r.encodedSizeHint())
	dst = r.appendHead(dst, r.flags(r.Tx != nil), len(r.Utxos))
	for _, e := range r.Utxos {
		dst = appendSlot(dst, e)
	}
	dst = r.appendBlockLists(dst)
	return r.appendRest(dst)
}

// appendSlot appends e's slot.
func appendSlot(dst []byte, e Entry) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, slotSize)...)
	slot := dst[start:]
	switch {
	case len(e) == 0:
	case len(e) == UtxoHashSize:
		copy(slot, e)
		slot[slotSize-1] = slotUnspent
	case len(e) == FullEntrySize:
		copy(slot, e)
		slot[slotSize-1] = slotSpent
	default:
		slot[slotSize-1] = slotInvalid
	}
	return dst
}

// appendRest appends the tail after the block lists: the lists that only
// the decoded record's operations change, the transaction and its inpoints.
func (r *Record) appendRest(dst []byte) []byte {
	u := binary.AppendUvarint
	dst = u(dst, uint64(len(r.ConflictingChildren)))
	for _, h := range r.ConflictingChildren {
		dst = append(dst, h[:]...)
	}
	if len(r.DeletedChildren) > 0 {
		dst = u(dst, uint64(len(r.DeletedChildren)))
		for _, h := range r.DeletedChildren {
			dst = append(dst, h[:]...)
		}
	}

	dst = u(dst, uint64(len(r.UtxoSpendableIn)))
	if len(r.UtxoSpendableIn) > 0 {
		offsets := make([]uint32, 0, len(r.UtxoSpendableIn))
		for k := range r.UtxoSpendableIn {
			offsets = append(offsets, k)
		}
		slices.Sort(offsets)
		for _, k := range offsets {
			dst = u(dst, uint64(k))
			dst = u(dst, uint64(r.UtxoSpendableIn[k]))
		}
	}

	dst = u(dst, uint64(len(r.Reassignments)))
	for _, ra := range r.Reassignments {
		dst = u(dst, uint64(ra.Offset))
		dst = append(dst, ra.UtxoHash[:]...)
		dst = append(dst, ra.NewUtxoHash[:]...)
		dst = u(dst, uint64(ra.BlockHeight))
	}

	if r.Tx != nil {
		dst = u(dst, uint64(len(r.Tx)))
		dst = append(dst, r.Tx...)
	}

	switch {
	case r.TxInpoints.IsEmpty() && len(r.keptInpoints) > 0:
		dst = u(dst, uint64(len(r.keptInpoints)))
		dst = append(dst, r.keptInpoints...)
	case r.TxInpoints.IsEmpty():
		dst = u(dst, 0)
	default:
		dst = u(dst, uint64(txInpointsSize(r.TxInpoints)))
		dst = appendTxInpoints(dst, r.TxInpoints)
	}
	return dst
}

// flags returns the record's flags field; hasTx is passed, as a View
// keeps the transaction in its tail without holding it.
func (r *Record) flags(hasTx bool) uint64 {
	var flags uint64
	for _, f := range []struct {
		set bool
		bit uint64
	}{
		{r.Frozen, flagFrozen}, {r.Locked, flagLocked}, {r.Creating, flagCreating},
		{r.Conflicting, flagConflicting}, {r.External, flagExternal},
		{r.IsCoinbase, flagCoinbase}, {hasTx, flagHasTx},
		{len(r.DeletedChildren) > 0, flagHasDeletedChildren},
		{r.OutputsOnly, flagOutputsOnly},
	} {
		if f.set {
			flags |= f.bit
		}
	}
	return flags
}

// appendHead appends the record's fixed head (headSize bytes): the format
// version, the flags, the fixed fields and the count of slots that follow.
// AppendEncode and View share it.
func (r *Record) appendHead(dst []byte, flags uint64, slots int) []byte {
	le := binary.LittleEndian
	dst = append(dst, FormatVersion)
	dst = le.AppendUint16(dst, uint16(flags))
	dst = append(dst, r.TxID[:]...)
	for _, v := range []uint32{r.Index, r.FirstVout, r.Version, r.LockTime} {
		dst = le.AppendUint32(dst, v)
	}
	dst = le.AppendUint64(dst, r.Fee)
	dst = le.AppendUint64(dst, r.SizeInBytes)
	dst = le.AppendUint32(dst, r.SpendingHeight)
	dst = le.AppendUint32(dst, r.UnminedSince)
	dst = le.AppendUint64(dst, uint64(r.CreatedAt))
	for _, v := range []uint32{
		r.PreserveUntil, r.DeleteAtHeight, r.TotalUtxos, r.TotalExtraRecs,
		r.SpentExtraRecs, r.RecordUtxos, r.SpentUtxos, uint32(slots),
	} {
		dst = le.AppendUint32(dst, v)
	}
	return dst
}

// appendBlockLists appends BlockIDs, BlockHeights and SubtreeIdxs, the
// tail's first fields and the only ones set-mined changes.
func (r *Record) appendBlockLists(dst []byte) []byte {
	u := binary.AppendUvarint
	dst = u(dst, uint64(len(r.BlockIDs)))
	for _, v := range r.BlockIDs {
		dst = u(dst, uint64(v))
	}
	dst = u(dst, uint64(len(r.BlockHeights)))
	for _, v := range r.BlockHeights {
		dst = u(dst, uint64(v))
	}
	dst = u(dst, uint64(len(r.SubtreeIdxs)))
	for _, v := range r.SubtreeIdxs {
		dst = binary.AppendVarint(dst, int64(v))
	}
	return dst
}

// Decode parses an encoded record and checks its invariants (see Validate).
// It never panics; any damage is reported as CodeMalformed and an unknown
// format version as CodeUnsupportedVersion. The result does not alias b.
func Decode(b []byte) (*Record, error) {
	return decode(b, decodeCopy)
}

// DecodeShared is Decode for a read-modify-write that holds b while it uses
// the result: the outputs (Utxos) and the transaction bytes (Tx) share b's
// memory instead of being copied, which is most of a record's bytes. Every
// operation replaces entries rather than writing into them, so operating
// on the result and encoding it leaves b untouched; the result's Utxos and
// Tx must not be used once b is released.
func DecodeShared(b []byte) (*Record, error) {
	return decode(b, decodeShared)
}

// DecodeForUpdate is DecodeShared for the read-modify-write of a record
// operation. No operation reads or changes a transaction's inpoints, so they
// are checked but not decoded: TxInpoints stays empty, and AppendEncode
// writes the inpoints back exactly as they were read for as long as
// TxInpoints is left empty. The result shares b like DecodeShared's, the
// inpoints included; Unshare drops what shares it.
func DecodeForUpdate(b []byte) (*Record, error) {
	return decode(b, decodeForUpdate)
}

// decodeMode says how much of a record decode copies and decodes.
type decodeMode uint8

const (
	decodeCopy      decodeMode = iota // Decode: nothing shared
	decodeShared                      // DecodeShared: outputs and Tx share b
	decodeForUpdate                   // DecodeForUpdate: as shared, inpoints kept encoded
)

// Unshare drops the fields of a record from DecodeShared or DecodeForUpdate
// that share the decoded bytes (Utxos, Tx, the kept inpoints), so that what
// is left can outlive them.
func (r *Record) Unshare() {
	r.Utxos, r.Tx, r.keptInpoints = nil, nil, nil
}

func decode(b []byte, mode decodeMode) (*Record, error) {
	rec := &Record{}
	rd, flags, slots, err := decodeHeader(b, rec)
	if err != nil {
		return nil, err
	}
	shared := mode != decodeCopy

	decodeBlockLists(&rd, rec)
	if n := rd.count(chainhash.HashSize); n > 0 {
		rec.ConflictingChildren = make([]chainhash.Hash, n)
		for i := range rec.ConflictingChildren {
			rec.ConflictingChildren[i] = rd.hash()
		}
	}
	decodeSpendRules(&rd, flags, rec)
	decodeReassignments(&rd, rec)
	if flags&flagHasTx != 0 {
		tx := rd.bytesField()
		switch {
		case rd.err != nil:
		case shared:
			rec.Tx = tx[:len(tx):len(tx)]
		default:
			rec.Tx = append(make([]byte, 0, len(tx)), tx...)
		}
	}
	if inp := rd.bytesField(); len(inp) > 0 {
		if mode == decodeForUpdate {
			if err := checkTxInpoints(inp); err != nil && rd.err == nil {
				rd.err = err
			}
			rec.keptInpoints = inp
		} else {
			t, err := DecodeTxInpoints(inp)
			if err != nil && rd.err == nil {
				rd.err = err.(*model.Error)
			}
			rec.TxInpoints = t
		}
	}
	if rd.err == nil && rd.remaining() != 0 {
		rd.fail("%d trailing bytes", rd.remaining())
	}
	if rd.err != nil {
		return nil, rd.err
	}
	if _, err := countSlots(slots); err != nil {
		return nil, err
	}
	if !shared {
		slots = bytes.Clone(slots)
	}
	rec.Utxos = slotEntries(slots)
	if err := rec.Validate(); err != nil {
		return nil, err
	}
	return rec, nil
}

// decodeHeader reads the fixed head of an encoded record into rec, and
// returns the flags, the slots' bytes (their states unchecked; see
// countSlots) and the reader positioned at the tail. Decode and Inspect
// share it.
func decodeHeader(b []byte, rec *Record) (rd reader, flags uint64, slots []byte, err *model.Error) {
	if len(b) == 0 {
		return reader{}, 0, nil, malformed("empty record")
	}
	if b[0] != FormatVersion {
		return reader{}, 0, nil, &model.Error{Code: model.CodeUnsupportedVersion, Msg: fmt.Sprintf("record format version %d is not supported (want %d)", b[0], FormatVersion)}
	}
	if len(b) < headSize {
		return reader{}, 0, nil, malformed("record of %d bytes is shorter than its %d-byte head", len(b), headSize)
	}
	le := binary.LittleEndian
	flags = uint64(le.Uint16(b[1:]))
	if flags&^flagsKnown != 0 {
		return reader{}, 0, nil, malformed("unknown flags %#x", flags&^flagsKnown)
	}
	rec.Frozen = flags&flagFrozen != 0
	rec.Locked = flags&flagLocked != 0
	rec.Creating = flags&flagCreating != 0
	rec.Conflicting = flags&flagConflicting != 0
	rec.External = flags&flagExternal != 0
	rec.IsCoinbase = flags&flagCoinbase != 0
	rec.OutputsOnly = flags&flagOutputsOnly != 0

	h := fixedFields(b[3+chainhash.HashSize : headSize])
	copy(rec.TxID[:], b[3:])
	rec.Index, rec.FirstVout, rec.Version, rec.LockTime = h.u32(), h.u32(), h.u32(), h.u32()
	rec.Fee, rec.SizeInBytes = h.u64(), h.u64()
	rec.SpendingHeight, rec.UnminedSince = h.u32(), h.u32()
	rec.CreatedAt = int64(h.u64())
	rec.PreserveUntil, rec.DeleteAtHeight, rec.TotalUtxos, rec.TotalExtraRecs = h.u32(), h.u32(), h.u32(), h.u32()
	rec.SpentExtraRecs, rec.RecordUtxos, rec.SpentUtxos = h.u32(), h.u32(), h.u32()

	rd = reader{b: b, off: headSize - 4}
	n := rd.fixedCount(slotSize)
	slots = rd.take(n * slotSize)
	return rd, flags, slots, rd.err
}

// fixedFields reads the head's little-endian fields in order; the head's
// length was checked, so it needs no checks.
type fixedFields []byte

func (f *fixedFields) u32() uint32 {
	v := binary.LittleEndian.Uint32(*f)
	*f = (*f)[4:]
	return v
}

func (f *fixedFields) u64() uint64 {
	v := binary.LittleEndian.Uint64(*f)
	*f = (*f)[8:]
	return v
}

// slotCounts are what the slots hold, for Validate's counters.
type slotCounts struct {
	stored, spent uint32
	frozen        bool
}

// zeroSlot is a slot that holds nothing; its spending data is that of a
// slot no one spent.
var (
	zeroSlot     [slotSize]byte
	zeroSpending = zeroSlot[:SpendingDataSize]
)

// countSlots checks every slot's state and padding, and counts what they
// hold: a slot has exactly one encoding.
func countSlots(slots []byte) (slotCounts, *model.Error) {
	var c slotCounts
	for at := 0; at < len(slots); at += slotSize {
		slot := slots[at : at+slotSize]
		spending := slot[UtxoHashSize : slotSize-1]
		switch slot[slotSize-1] {
		case slotNotStored:
			if !bytes.Equal(slot, zeroSlot[:]) {
				return c, malformed("slot %d is not stored but holds bytes", at/slotSize)
			}
		case slotUnspent:
			if !bytes.Equal(spending, zeroSpending) {
				return c, malformed("slot %d is unspent but holds spending data", at/slotSize)
			}
			c.stored++
		case slotSpent:
			c.stored++
			if Entry(slot[:FullEntrySize]).IsFrozen() {
				c.frozen = true
			} else {
				c.spent++
			}
		default:
			return c, malformed("slot %d has unknown state %d", at/slotSize, slot[slotSize-1])
		}
	}
	return c, nil
}

// slotEntries returns the entries of checked slots, sharing their bytes.
func slotEntries(slots []byte) []Entry {
	n := len(slots) / slotSize
	if n == 0 {
		return nil
	}
	out := make([]Entry, n)
	for i := range out {
		out[i] = slotEntry(slots[i*slotSize : (i+1)*slotSize])
	}
	return out
}

// slotEntry is the entry a checked slot holds, sharing its bytes.
func slotEntry(slot []byte) Entry {
	switch slot[slotSize-1] {
	case slotUnspent:
		return Entry(slot[:UtxoHashSize:UtxoHashSize])
	case slotSpent:
		return Entry(slot[:FullEntrySize:FullEntrySize])
	}
	return nil
}

// decodeBlockLists reads BlockIDs, BlockHeights and SubtreeIdxs into rec.
func decodeBlockLists(rd *reader, rec *Record) {
	// The ids and the heights, which Validate wants as many, share one
	// allocation; each is capped, so that appending to one copies it.
	var blockLists []uint32
	if n := rd.count(1); n > 0 {
		blockLists = make([]uint32, 2*n)
		rec.BlockIDs = blockLists[:n:n]
		for i := range rec.BlockIDs {
			rec.BlockIDs[i] = rd.u32()
		}
	}
	if n := rd.count(1); n > 0 {
		if n == len(rec.BlockIDs) {
			rec.BlockHeights = blockLists[n : 2*n : 2*n]
		} else {
			rec.BlockHeights = make([]uint32, n)
		}
		for i := range rec.BlockHeights {
			rec.BlockHeights[i] = rd.u32()
		}
	}
	if n := rd.count(1); n > 0 {
		rec.SubtreeIdxs = make([]int, n)
		for i := range rec.SubtreeIdxs {
			v := rd.varint()
			if int64(int(v)) != v {
				rd.fail("subtree index %d overflows int", v)
			}
			rec.SubtreeIdxs[i] = int(v)
		}
	}
}

// decodeReassignments reads the Reassignments into rec.
func decodeReassignments(rd *reader, rec *Record) {
	if n := rd.count(2 + 2*chainhash.HashSize); n > 0 {
		rec.Reassignments = make([]Reassignment, n)
		for i := range rec.Reassignments {
			ra := &rec.Reassignments[i]
			ra.Offset = rd.u32()
			ra.UtxoHash = rd.hash()
			ra.NewUtxoHash = rd.hash()
			ra.BlockHeight = rd.u32()
		}
	}
}

// decodeSpendRules reads the two lists the spend rule consults besides the
// outputs, DeletedChildren and UtxoSpendableIn, into rec (both are empty
// on almost every record). Decode and Inspect share it.
func decodeSpendRules(rd *reader, flags uint64, rec *Record) {
	if flags&flagHasDeletedChildren != 0 {
		n := rd.count(chainhash.HashSize)
		if n == 0 {
			rd.fail("deletedChildren flagged but empty")
		}
		rec.DeletedChildren = make([]chainhash.Hash, n)
		for i := range rec.DeletedChildren {
			rec.DeletedChildren[i] = rd.hash()
		}
	}
	if n := rd.count(2); n > 0 {
		rec.UtxoSpendableIn = make(map[uint32]uint32, n)
		prev := int64(-1)
		for range n {
			k := rd.u32()
			v := rd.u32()
			if rd.err == nil && int64(k) <= prev {
				rd.fail("utxoSpendableIn offsets not strictly ascending")
			}
			prev = int64(k)
			rec.UtxoSpendableIn[k] = v
		}
	}
}

// Validate checks the invariants every stored record keeps. Decode calls
// it; tests and Build use it to catch a broken record before it is written.
func (r *Record) Validate() error {
	var stored, spent uint32
	frozen := false
	for i, e := range r.Utxos {
		if !e.valid() {
			return malformed("utxo %d is %d bytes, want 0, %d or %d", i, len(e), UtxoHashSize, FullEntrySize)
		}
		if e.Stored() {
			stored++
		}
		if e.IsSpent() {
			spent++
		}
		if e.IsFrozen() {
			frozen = true
		}
	}
	if err := r.validate(len(r.Utxos), stored, spent, frozen); err != nil {
		return err // not the nil *model.Error, which is a non-nil error
	}
	return nil
}

// validate is Validate for a record of outputs outputs, stored of them
// stored, spent spent, some frozen when frozen; it reads no other output,
// so a View, which counts them on the encoding, shares it.
func (r *Record) validate(outputs int, stored, spent uint32, frozen bool) *model.Error {
	switch {
	case stored != r.RecordUtxos:
		return malformed("recordUtxos %d but %d stored entries", r.RecordUtxos, stored)
	case spent != r.SpentUtxos:
		return malformed("spentUtxos %d but %d spent entries", r.SpentUtxos, spent)
	case frozen != r.Frozen:
		return malformed("frozen flag %v disagrees with the entries", r.Frozen)
	case len(r.BlockIDs) != len(r.BlockHeights) || len(r.BlockIDs) != len(r.SubtreeIdxs):
		return malformed("blockIDs/blockHeights/subtreeIdxs lengths %d/%d/%d differ", len(r.BlockIDs), len(r.BlockHeights), len(r.SubtreeIdxs))
	case r.SpentExtraRecs > r.TotalExtraRecs:
		return malformed("spentExtraRecs %d > totalExtraRecs %d", r.SpentExtraRecs, r.TotalExtraRecs)
	case r.Index == 0 && r.FirstVout != 0:
		return malformed("master record with firstVout %d", r.FirstVout)
	case uint64(r.FirstVout)+uint64(outputs) > 1<<32:
		return malformed("outputs beyond vout 2^32")
	case len(r.TxInpoints.ParentTxHashes) != len(r.TxInpoints.Idxs):
		return malformed("txInpoints parents/indices lengths differ")
	}
	for k := range r.UtxoSpendableIn {
		if uint64(k) >= uint64(outputs) {
			return malformed("utxoSpendableIn offset %d beyond %d outputs", k, outputs)
		}
	}
	for _, ra := range r.Reassignments {
		if uint64(ra.Offset) >= uint64(outputs) {
			return malformed("reassignment offset %d beyond %d outputs", ra.Offset, outputs)
		}
	}
	return nil
}
