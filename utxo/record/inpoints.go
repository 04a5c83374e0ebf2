package record

import (
	"encoding/binary"
	"slices"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// Outpoint names output Vout of transaction TxID.
type Outpoint struct {
	TxID chainhash.Hash
	Vout uint32
}

// TxInpoints lists the outpoints a transaction spends, grouped by parent:
// ParentTxHashes[i] is a parent and Idxs[i] the output indices of it that
// are spent, both in first-seen input order. Grouping lets a caller touch
// each parent record once.
type TxInpoints struct {
	ParentTxHashes []chainhash.Hash
	Idxs           [][]uint32
}

// NewTxInpoints groups outpoints (in input order) by parent, keeping the
// order in which each parent is first seen and, within a parent, the input
// order of its indices.
func NewTxInpoints(outpoints []Outpoint) TxInpoints {
	var t TxInpoints
	// A map finds a parent among many; most transactions have a handful
	// of inputs, where a scan is cheaper than building one.
	var pos map[chainhash.Hash]int
	if len(outpoints) > smallParentScan {
		pos = make(map[chainhash.Hash]int, len(outpoints))
	}
	for _, op := range outpoints {
		i, ok := 0, false
		if pos != nil {
			i, ok = pos[op.TxID]
		} else {
			i = slices.Index(t.ParentTxHashes, op.TxID)
			ok = i >= 0
		}
		if !ok {
			i = len(t.ParentTxHashes)
			if pos != nil {
				pos[op.TxID] = i
			}
			t.ParentTxHashes = append(t.ParentTxHashes, op.TxID)
			t.Idxs = append(t.Idxs, nil)
		}
		t.Idxs[i] = append(t.Idxs[i], op.Vout)
	}
	return t
}

// smallParentScan is the number of inputs up to which NewTxInpoints finds a
// parent by scanning rather than through a map.
const smallParentScan = 16

// Len is the number of outpoints.
func (t TxInpoints) Len() int {
	n := 0
	for _, idx := range t.Idxs {
		n += len(idx)
	}
	return n
}

// Outpoints flattens t back to parent-then-index order.
func (t TxInpoints) Outpoints() []Outpoint {
	out := make([]Outpoint, 0, t.Len())
	for i, h := range t.ParentTxHashes {
		if i >= len(t.Idxs) {
			break
		}
		for _, v := range t.Idxs[i] {
			out = append(out, Outpoint{TxID: h, Vout: v})
		}
	}
	return out
}

// Clone returns a deep copy.
func (t TxInpoints) Clone() TxInpoints {
	c := TxInpoints{ParentTxHashes: slices.Clone(t.ParentTxHashes)}
	if t.Idxs != nil {
		c.Idxs = make([][]uint32, len(t.Idxs))
		for i, idx := range t.Idxs {
			c.Idxs[i] = slices.Clone(idx)
		}
	}
	return c
}

// IsEmpty reports whether t lists no parent.
func (t TxInpoints) IsEmpty() bool { return len(t.ParentTxHashes) == 0 && len(t.Idxs) == 0 }

// Bytes serializes t in the layout of the BSV go-subtree package, so blobs
// interoperate with Teranode tooling:
//
//	LE uint32 P                      number of parents
//	P × 32 bytes                     parent txids
//	P × (LE uint32 k ‖ k × LE uint32) spent output indices per parent
//
// ParentTxHashes and Idxs must have the same length; a mismatch is
// reported as INVALID_PARAMETER.
func (t TxInpoints) Bytes() ([]byte, error) {
	if len(t.ParentTxHashes) != len(t.Idxs) {
		return nil, &Error{Code: CodeInvalidParameter, Msg: "txinpoints: parent hashes and index lists differ in length"}
	}
	return t.appendTo(make([]byte, 0, t.encodedSize())), nil
}

func (t TxInpoints) encodedSize() int {
	n := 4 + 32*len(t.ParentTxHashes)
	for _, idx := range t.Idxs {
		n += 4 + 4*len(idx)
	}
	return n
}

// appendTo writes the go-subtree layout; the caller ensures equal lengths.
func (t TxInpoints) appendTo(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(t.ParentTxHashes)))
	for _, h := range t.ParentTxHashes {
		dst = append(dst, h[:]...)
	}
	for _, idx := range t.Idxs {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(idx)))
		for _, v := range idx {
			dst = binary.LittleEndian.AppendUint32(dst, v)
		}
	}
	return dst
}

// DecodeTxInpoints parses the layout written by Bytes. Trailing bytes and
// counts larger than the input could hold are MALFORMED.
func DecodeTxInpoints(b []byte) (TxInpoints, error) {
	r := reader{b: b}
	t := r.txInpoints(true)
	if r.err == nil && r.remaining() != 0 {
		r.fail("txinpoints: %d trailing bytes", r.remaining())
	}
	if r.err != nil {
		return TxInpoints{}, r.err
	}
	return t, nil
}

// checkTxInpoints reports whether b is a layout DecodeTxInpoints accepts,
// without building the lists.
func checkTxInpoints(b []byte) *Error {
	r := reader{b: b}
	r.txInpoints(false)
	if r.err == nil && r.remaining() != 0 {
		r.fail("txinpoints: %d trailing bytes", r.remaining())
	}
	return r.err
}

// txInpoints reads the go-subtree layout from r; without build it only
// checks and skips it.
func (r *reader) txInpoints(build bool) TxInpoints {
	var t TxInpoints
	p := r.fixedCount(36) // each parent costs 32 bytes of hash + 4 of count
	if p == 0 || r.err != nil {
		return t
	}
	if !build {
		r.take(p * chainhash.HashSize)
		for range p {
			r.take(4 * r.fixedCount(4))
		}
		return t
	}
	t.ParentTxHashes = make([]chainhash.Hash, p)
	for i := range t.ParentTxHashes {
		t.ParentTxHashes[i] = r.hash()
	}
	t.Idxs = make([][]uint32, p)
	for i := range t.Idxs {
		k := r.fixedCount(4)
		if r.err != nil {
			return TxInpoints{}
		}
		idx := make([]uint32, k)
		for j := range idx {
			idx[j] = r.u32le()
		}
		t.Idxs[i] = idx
	}
	return t
}
