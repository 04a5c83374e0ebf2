package chain

import (
	"fmt"

	"github.com/btcsuite/btcd/wire"
)

// The parts of a transaction that the standard and the Extended Format
// serialisations share, read the same way by both decoders. Errors are
// *ParseError naming the field and its offset.

// txIn reads input i's outpoint, unlocking script and sequence into in.
func (c *cursor) txIn(in *wire.TxIn, i int) error {
	at := c.off
	var err error
	if in.PreviousOutPoint.Hash, err = c.hash(); err != nil {
		return fieldErr(err, at, fmt.Sprintf("input %d previous txid", i))
	}
	if in.PreviousOutPoint.Index, err = c.uint32(); err != nil {
		return fieldErr(err, at, fmt.Sprintf("input %d previous output index", i))
	}
	at = c.off
	if in.SignatureScript, err = c.varBytes(); err != nil {
		return fieldErr(err, at, fmt.Sprintf("input %d unlocking script", i))
	}
	at = c.off
	if in.Sequence, err = c.uint32(); err != nil {
		return fieldErr(err, at, fmt.Sprintf("input %d sequence", i))
	}
	return nil
}

// txOuts reads the output count and the outputs, in one backing array (as
// wire does) to keep allocations per transaction constant.
func (c *cursor) txOuts() ([]*wire.TxOut, error) {
	at := c.off
	numOut, err := c.count(minTxOutSize)
	if err != nil {
		return nil, fieldErr(err, at, "output count")
	}
	outs := make([]wire.TxOut, numOut)
	ptrs := make([]*wire.TxOut, numOut)
	for i := range outs {
		out := &outs[i]
		ptrs[i] = out
		at = c.off
		value, err := c.uint64()
		if err != nil {
			return nil, fieldErr(err, at, fmt.Sprintf("output %d value", i))
		}
		out.Value = int64(value) // bit pattern kept; wire writes uint64(Value)
		at = c.off
		if out.PkScript, err = c.varBytes(); err != nil {
			return nil, fieldErr(err, at, fmt.Sprintf("output %d locking script", i))
		}
	}
	return ptrs, nil
}
