package record

import (
	"encoding/binary"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/utxo/model"
)

// EncodeTxInpoints serializes t in the layout of the BSV go-subtree
// package, so blobs interoperate with Teranode tooling:
//
//	LE uint32 P                      number of parents
//	P × 32 bytes                     parent txids
//	P × (LE uint32 k ‖ k × LE uint32) spent output indices per parent
//
// ParentTxHashes and Idxs must have the same length; a mismatch is
// reported as INVALID_PARAMETER.
func EncodeTxInpoints(t model.TxInpoints) ([]byte, error) {
	if len(t.ParentTxHashes) != len(t.Idxs) {
		return nil, &model.Error{Code: model.CodeInvalidParameter, Msg: "txinpoints: parent hashes and index lists differ in length"}
	}
	return appendTxInpoints(make([]byte, 0, txInpointsSize(t)), t), nil
}

// txInpointsSize is the length of t's encoding.
func txInpointsSize(t model.TxInpoints) int {
	n := 4 + 32*len(t.ParentTxHashes)
	for _, idx := range t.Idxs {
		n += 4 + 4*len(idx)
	}
	return n
}

// appendTxInpoints writes the go-subtree layout; the caller ensures equal
// lengths.
func appendTxInpoints(dst []byte, t model.TxInpoints) []byte {
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

// DecodeTxInpoints parses the layout written by EncodeTxInpoints. Trailing bytes and
// counts larger than the input could hold are MALFORMED.
func DecodeTxInpoints(b []byte) (model.TxInpoints, error) {
	r := reader{b: b}
	t := r.txInpoints(true)
	if r.err == nil && r.remaining() != 0 {
		r.fail("txinpoints: %d trailing bytes", r.remaining())
	}
	if r.err != nil {
		return model.TxInpoints{}, r.err
	}
	return t, nil
}

// checkTxInpoints reports whether b is a layout DecodeTxInpoints accepts,
// without building the lists.
func checkTxInpoints(b []byte) *model.Error {
	r := reader{b: b}
	r.txInpoints(false)
	if r.err == nil && r.remaining() != 0 {
		r.fail("txinpoints: %d trailing bytes", r.remaining())
	}
	return r.err
}

// txInpoints reads the go-subtree layout from r; without build it only
// checks and skips it.
func (r *reader) txInpoints(build bool) model.TxInpoints {
	var t model.TxInpoints
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
			return model.TxInpoints{}
		}
		idx := make([]uint32, k)
		for j := range idx {
			idx[j] = r.u32le()
		}
		t.Idxs[i] = idx
	}
	return t
}
