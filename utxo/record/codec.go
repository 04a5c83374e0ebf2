package record

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/utxo/model"
)

// FormatVersion is the first byte of every encoded record. Decode refuses
// any other value with CodeUnsupportedVersion, so a store written by a newer
// build is never misread by an older one.
const FormatVersion = 1

// Record flags (one uvarint).
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

// Entry tags in the encoded utxos array.
const (
	tagNotStored = 0 // nil entry, no bytes follow
	tagUnspent   = 1 // 32-byte hash follows
	tagSpent     = 2 // 68 bytes follow (hash ‖ spending data)
	tagFrozen    = 3 // 32-byte hash follows; the 0xFF marker is implied
	tagInvalid   = 0xff
)

// Encode serializes the record in format version 1. All integers are
// unsigned LEB128 varints (CreatedAt and SubtreeIdxs zig-zag) unless noted:
//
//	u8      FormatVersion (1)
//	uvarint flags: frozen|locked<<1|creating<<2|conflicting<<3|external<<4|coinbase<<5|hasTx<<6|
//	        hasDeletedChildren<<7|outputsOnly<<8
//	[32]    TxID
//	        Index, FirstVout, Version, LockTime, Fee, SizeInBytes, SpendingHeight,
//	        UnminedSince, CreatedAt (zig-zag), PreserveUntil, DeleteAtHeight,
//	        TotalUtxos, TotalExtraRecs, SpentExtraRecs, RecordUtxos, SpentUtxos
//	        n, n × BlockID;  n, n × BlockHeight;  n, n × SubtreeIdx (zig-zag)
//	        n, n × [32] ConflictingChildren
//	        n, n × [32] DeletedChildren           (only when hasDeletedChildren)
//	        n, n × (offset, height) UtxoSpendableIn, ascending offset
//	        n, n × (offset, [32] utxoHash, [32] newUtxoHash, blockHeight) Reassignments
//	        len, Tx bytes                        (only when hasTx)
//	        len, TxInpoints (go-subtree layout)  (len 0 when empty)
//	        n, n × entry: tag byte, then 0 / 32 / 68 / 32 bytes for
//	        not stored / unspent / spent / frozen
//
// The utxos array goes last so a reader interested only in the metadata
// can stop early. The record should satisfy Validate; an entry of an
// illegal size is written with a tag Decode rejects, never silently dropped.
func (r *Record) Encode() []byte {
	return r.AppendEncode(nil)
}

func (r *Record) encodedSizeHint() int {
	n := 160 + len(r.Tx) + len(r.keptInpoints) + 36*len(r.ConflictingChildren) + 32*len(r.DeletedChildren) + 12*len(r.BlockIDs) +
		10*len(r.UtxoSpendableIn) + 76*len(r.Reassignments) + txInpointsSize(r.TxInpoints) + 10
	for _, e := range r.Utxos {
		n += 1 + len(e)
	}
	return n
}

// AppendEncode appends the encoding of r to dst (see Encode), growing dst
// once: a record of thousands of outputs would otherwise be copied at
// every growth.
func (r *Record) AppendEncode(dst []byte) []byte {
	dst = slices.Grow(dst, r.encodedSizeHint())
	u := binary.AppendUvarint
	dst = r.appendHead(dst, r.flags(r.Tx != nil))

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

	dst = u(dst, uint64(len(r.Utxos)))
	for _, e := range r.Utxos {
		switch {
		case len(e) == 0:
			dst = append(dst, tagNotStored)
		case len(e) == UtxoHashSize:
			dst = append(dst, tagUnspent)
			dst = append(dst, e...)
		case e.IsFrozen():
			dst = append(dst, tagFrozen)
			dst = append(dst, e[:UtxoHashSize]...)
		case len(e) == FullEntrySize:
			dst = append(dst, tagSpent)
			dst = append(dst, e...)
		default:
			dst = append(dst, tagInvalid)
		}
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

// appendHead appends the record's head: the format version, flags, the
// fixed fields and the block lists, everything before ConflictingChildren.
// AppendEncode and View.AppendEncode share it.
func (r *Record) appendHead(dst []byte, flags uint64) []byte {
	u := binary.AppendUvarint
	dst = append(dst, FormatVersion)
	dst = u(dst, flags)
	dst = append(dst, r.TxID[:]...)
	for _, v := range []uint64{
		uint64(r.Index), uint64(r.FirstVout), uint64(r.Version), uint64(r.LockTime),
		r.Fee, r.SizeInBytes, uint64(r.SpendingHeight), uint64(r.UnminedSince),
	} {
		dst = u(dst, v)
	}
	dst = binary.AppendVarint(dst, r.CreatedAt)
	for _, v := range []uint32{
		r.PreserveUntil, r.DeleteAtHeight, r.TotalUtxos, r.TotalExtraRecs,
		r.SpentExtraRecs, r.RecordUtxos, r.SpentUtxos,
	} {
		dst = u(dst, uint64(v))
	}

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
	rd, flags, err := decodeHeader(b, rec)
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
	rec.Utxos = rd.entries(shared)
	if rd.err == nil && rd.remaining() != 0 {
		rd.fail("%d trailing bytes", rd.remaining())
	}
	if rd.err != nil {
		return nil, rd.err
	}
	if err := rec.Validate(); err != nil {
		return nil, err
	}
	return rec, nil
}

// decodeHeader reads the format version, the flags and the fixed fields
// (TxID to SpentUtxos) of an encoded record into rec, and returns the
// reader positioned at the block lists. Decode and Inspect share it.
func decodeHeader(b []byte, rec *Record) (reader, uint64, *model.Error) {
	if len(b) == 0 {
		return reader{}, 0, malformed("empty record")
	}
	if b[0] != FormatVersion {
		return reader{}, 0, &model.Error{Code: model.CodeUnsupportedVersion, Msg: fmt.Sprintf("record format version %d is not supported (want %d)", b[0], FormatVersion)}
	}
	rd := reader{b: b, off: 1}
	flags := rd.uvarint()
	if flags&^flagsKnown != 0 {
		rd.fail("unknown flags %#x", flags&^flagsKnown)
	}
	rec.Frozen = flags&flagFrozen != 0
	rec.Locked = flags&flagLocked != 0
	rec.Creating = flags&flagCreating != 0
	rec.Conflicting = flags&flagConflicting != 0
	rec.External = flags&flagExternal != 0
	rec.IsCoinbase = flags&flagCoinbase != 0
	rec.OutputsOnly = flags&flagOutputsOnly != 0

	rec.TxID = rd.hash()
	rec.Index = rd.u32()
	rec.FirstVout = rd.u32()
	rec.Version = rd.u32()
	rec.LockTime = rd.u32()
	rec.Fee = rd.uvarint()
	rec.SizeInBytes = rd.uvarint()
	rec.SpendingHeight = rd.u32()
	rec.UnminedSince = rd.u32()
	rec.CreatedAt = rd.varint()
	rec.PreserveUntil = rd.u32()
	rec.DeleteAtHeight = rd.u32()
	rec.TotalUtxos = rd.u32()
	rec.TotalExtraRecs = rd.u32()
	rec.SpentExtraRecs = rd.u32()
	rec.RecordUtxos = rd.u32()
	rec.SpentUtxos = rd.u32()
	return rd, flags, rd.err
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

// entries decodes the utxos array. Copying, it runs two passes: the first
// validates tags and sums the sizes, the second copies every entry into one
// allocation, so a 20,000-output record costs two allocations, not 20,000.
// Shared, one pass does: the unspent and spent entries point into the
// reader's bytes and only frozen ones, whose marker is not stored, are
// copied.
func (rd *reader) entries(shared bool) []Entry {
	n := rd.count(1)
	if rd.err != nil || n == 0 {
		return nil
	}
	if shared {
		return rd.sharedEntries(n)
	}
	start := rd.off
	total := 0
	for range n {
		switch tag := rd.byte(); tag {
		case tagNotStored:
		case tagUnspent:
			rd.take(UtxoHashSize)
			total += UtxoHashSize
		case tagFrozen:
			rd.take(UtxoHashSize)
			total += FullEntrySize
		case tagSpent:
			rd.take(FullEntrySize)
			total += FullEntrySize
		default:
			rd.fail("unknown utxo entry tag %d", tag)
		}
		if rd.err != nil {
			return nil
		}
	}
	out := make([]Entry, n)
	src := rd.b[start:rd.off] // validated by the first pass
	buf := make([]byte, total)
	pos := 0
	for i := range out {
		tag := src[0]
		src = src[1:]
		switch tag {
		case tagUnspent:
			copy(buf[pos:], src[:UtxoHashSize])
			src = src[UtxoHashSize:]
			out[i] = Entry(buf[pos : pos+UtxoHashSize : pos+UtxoHashSize])
			pos += UtxoHashSize
		case tagSpent:
			copy(buf[pos:], src[:FullEntrySize])
			src = src[FullEntrySize:]
			out[i] = Entry(buf[pos : pos+FullEntrySize : pos+FullEntrySize])
			pos += FullEntrySize
		case tagFrozen:
			copy(buf[pos:], src[:UtxoHashSize])
			src = src[UtxoHashSize:]
			copy(buf[pos+UtxoHashSize:pos+FullEntrySize], frozenMarkerBytes[:])
			out[i] = Entry(buf[pos : pos+FullEntrySize : pos+FullEntrySize])
			pos += FullEntrySize
		}
	}
	return out
}

// sharedEntries reads n entries that point into the reader's bytes (n was
// checked against the bytes left, so out is bounded by the input).
func (rd *reader) sharedEntries(n int) []Entry {
	out := make([]Entry, n)
	for i := range out {
		switch tag := rd.byte(); tag {
		case tagNotStored:
		case tagUnspent:
			out[i] = Entry(rd.take(UtxoHashSize))
		case tagSpent:
			out[i] = Entry(rd.take(FullEntrySize))
		case tagFrozen:
			if h := rd.take(UtxoHashSize); h != nil {
				out[i] = NewFrozenEntry(chainhash.Hash(h))
			}
		default:
			rd.fail("unknown utxo entry tag %d", tag)
		}
		if rd.err != nil {
			return nil
		}
	}
	return out
}

// frozenMarkerBytes is the 36-byte freeze marker.
var frozenMarkerBytes = appendSpendingData(nil, frozenSpendingData)

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
