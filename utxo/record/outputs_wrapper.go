package record

import (
	"encoding/binary"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/utxo/model"
)

// UTXOWrapper is the content of an external ".outputs" blob: the outputs of
// a transaction stored without its inputs (partial transactions, very large
// output sets).
type UTXOWrapper struct {
	TxID     chainhash.Hash
	Height   uint32
	Coinbase bool
	UTXOs    []WrappedUTXO
}

// WrappedUTXO is one output in a UTXOWrapper.
type WrappedUTXO struct {
	Index  uint32
	Value  uint64
	Script []byte
}

// MaxWrapperHeight is the largest height a UTXOWrapper can carry: the
// height shares a word with the coinbase flag.
const MaxWrapperHeight = 1<<31 - 1

// MaxWrapperIndex is the largest output index a store reads from a
// UTXOWrapper: a transaction is rebuilt from its wrapper with an output at
// every index up to the highest, so a damaged index cannot make the store
// allocate without limit. A coin above it cannot be stored.
const MaxWrapperIndex = 1<<26 - 1

// Bytes serializes the wrapper in the same layout Teranode's utxopersister
// writes, so .outputs blobs are interchangeable:
//
//	[32]    TxID
//	LE u32  Height<<1 | coinbase
//	LE u32  number of UTXOs
//	per UTXO: LE u32 Index ‖ LE u64 Value ‖ LE u32 len ‖ Script
//
// A height above MaxWrapperHeight is INVALID_PARAMETER.
func (w *UTXOWrapper) Bytes() ([]byte, error) {
	if w.Height > MaxWrapperHeight {
		return nil, model.NewError(model.CodeInvalidParameter, w.TxID, 0, "height %d does not fit the wrapper", w.Height)
	}
	size := 40
	for _, u := range w.UTXOs {
		size += 16 + len(u.Script)
	}
	b := make([]byte, 0, size)
	b = append(b, w.TxID[:]...)
	hc := w.Height << 1
	if w.Coinbase {
		hc |= 1
	}
	b = binary.LittleEndian.AppendUint32(b, hc)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(w.UTXOs)))
	for _, u := range w.UTXOs {
		b = binary.LittleEndian.AppendUint32(b, u.Index)
		b = binary.LittleEndian.AppendUint64(b, u.Value)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(u.Script)))
		b = append(b, u.Script...)
	}
	return b, nil
}

// DecodeUTXOWrapper parses the layout written by Bytes. Empty scripts
// decode as nil.
func DecodeUTXOWrapper(b []byte) (*UTXOWrapper, error) {
	r := reader{b: b}
	w := &UTXOWrapper{TxID: r.hash()}
	hc := r.u32le()
	w.Height, w.Coinbase = hc>>1, hc&1 == 1
	if n := r.fixedCount(16); n > 0 {
		w.UTXOs = make([]WrappedUTXO, n)
		for i := range w.UTXOs {
			u := &w.UTXOs[i]
			u.Index = r.u32le()
			u.Value = r.u64le()
			u.Script = cloneOrNil(r.take(int(r.fixedCount(1))))
		}
	}
	if err := r.finish("utxo wrapper"); err != nil {
		return nil, err
	}
	return w, nil
}
