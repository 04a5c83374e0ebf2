// Package damage makes damaged copies of a real block for the tests of the
// block checks (chain.BlockRules): one byte flipped in each region a
// damaged disk or a careless caller could touch, and the CVE-2012-2459
// repetition that keeps the merkle root. Each copy still parses, so it is
// the checks, not the parser, that must refuse it.
package damage

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/wire"

	"github.com/utxostore/utxostore/chain"
)

// Case is one damaged copy of a block and what must refuse it.
type Case struct {
	// Region names what was damaged, e.g. "output value".
	Region string
	// Block is the whole damaged block.
	Block []byte
	// Check is the check that must refuse it, and Reason a part of the
	// reason it must give ("" for any).
	Check  chain.Check
	Reason string
}

// Flips returns a copy of raw with one byte flipped for each region: the
// six header fields, the coinbase's input (its script, and its previous
// output index, which makes it no coinbase), and the input, output value
// and output script of the second transaction. raw must be a block of at
// least two transactions without witness data.
func Flips(raw []byte) ([]Case, error) {
	blk, err := chain.ParseBlock(raw)
	if err != nil {
		return nil, err
	}
	if len(blk.Txs) < 2 {
		return nil, fmt.Errorf("damage: the block has %d transactions, want two or more", len(blk.Txs))
	}
	first := chain.HeaderSize + wire.VarIntSerializeSize(uint64(len(blk.Txs)))
	coinbase, err := locate(first, blk.Txs[0])
	if err != nil {
		return nil, err
	}
	spender, err := locate(first+len(blk.Txs[0].Raw), blk.Txs[1])
	if err != nil {
		return nil, err
	}
	const highHash = "higher than expected max"
	cases := []struct {
		region string
		at     int
		mask   byte
		check  chain.Check
		reason string
	}{
		{"header version", 0, 0x01, chain.CheckProofOfWork, highHash},
		{"header previous block", 4, 0x01, chain.CheckProofOfWork, highHash},
		{"header merkle root", 36, 0x01, chain.CheckProofOfWork, highHash},
		{"header timestamp", 68, 0x01, chain.CheckProofOfWork, highHash},
		{"header bits mantissa", 72, 0x01, chain.CheckProofOfWork, highHash},
		// 0x1d becomes 0x1f: a target over mainnet's limit.
		{"header bits exponent", 75, 0x02, chain.CheckProofOfWork, "higher than max"},
		{"header nonce", 76, 0x01, chain.CheckProofOfWork, highHash},
		{"coinbase script", coinbase.inputScript, 0x01, chain.CheckMerkleRoot, "the header says"},
		{"coinbase previous output index", coinbase.inputIndex, 0x01, chain.CheckCoinbase, "is not a coinbase"},
		{"input previous txid", spender.inputTxID, 0x01, chain.CheckMerkleRoot, "the header says"},
		{"input script", spender.inputScript, 0x01, chain.CheckMerkleRoot, "the header says"},
		{"output value", spender.outputValue, 0x01, chain.CheckMerkleRoot, "the header says"},
		{"output script", spender.outputScript, 0x01, chain.CheckMerkleRoot, "the header says"},
	}
	out := make([]Case, len(cases))
	for i, c := range cases {
		b := bytes.Clone(raw)
		b[c.at] ^= c.mask
		out[i] = Case{Region: c.region, Block: b, Check: c.check, Reason: c.reason}
	}
	return out, nil
}

// RepeatTrailingPair returns raw with its last two transactions repeated
// at the end: CVE-2012-2459's second transaction list with the same merkle
// root, when the block's transaction count is 2 modulo 4 and at least 6.
func RepeatTrailingPair(raw []byte) (Case, error) {
	blk, err := chain.ParseBlock(raw)
	if err != nil {
		return Case{}, err
	}
	n := len(blk.Txs)
	if n < 6 || n%4 != 2 {
		return Case{}, fmt.Errorf("damage: repeating the last pair of %d transactions changes the merkle root", n)
	}
	var b bytes.Buffer
	b.Write(raw[:chain.HeaderSize])
	if err := wire.WriteVarInt(&b, 0, uint64(n+2)); err != nil {
		return Case{}, err
	}
	for _, tx := range append(blk.Txs, blk.Txs[n-2:]...) {
		b.Write(tx.Raw)
	}
	return Case{Region: "repeated trailing pair (CVE-2012-2459)", Block: b.Bytes(), Check: chain.CheckMerkleRoot, Reason: "CVE-2012-2459"}, nil
}

// txOffsets are block offsets of a transaction's fields.
type txOffsets struct {
	inputTxID, inputIndex, inputScript int // of its first input
	outputValue, outputScript          int // of its first output
}

// locate finds the fields of tx, which starts at offset start of its block.
func locate(start int, tx *chain.Tx) (txOffsets, error) {
	if tx.Raw[4] == 0 {
		return txOffsets{}, errors.New("damage: transactions with witness data are not supported")
	}
	msg := tx.Msg
	in := start + 4 + wire.VarIntSerializeSize(uint64(len(msg.TxIn)))
	script := msg.TxIn[0].SignatureScript
	off := txOffsets{
		inputTxID:   in,
		inputIndex:  in + 32,
		inputScript: in + 36 + wire.VarIntSerializeSize(uint64(len(script))),
	}
	if len(script) == 0 {
		return txOffsets{}, errors.New("damage: the first input has an empty script")
	}
	out := start + 4 + wire.VarIntSerializeSize(uint64(len(msg.TxIn)))
	for _, txIn := range msg.TxIn {
		out += 36 + wire.VarIntSerializeSize(uint64(len(txIn.SignatureScript))) + len(txIn.SignatureScript) + 4
	}
	out += wire.VarIntSerializeSize(uint64(len(msg.TxOut)))
	off.outputValue = out
	off.outputScript = out + 8 + wire.VarIntSerializeSize(uint64(len(msg.TxOut[0].PkScript)))
	if len(msg.TxOut[0].PkScript) == 0 {
		return txOffsets{}, errors.New("damage: the first output has an empty script")
	}
	return off, nil
}
