package coinstats

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/utxostore/utxostore/chain"
)

// MaxScriptSize is the longest script a spendable output can have (Core's
// MAX_SCRIPT_SIZE): a longer one fails every spend, so Core leaves it out of
// the set.
const MaxScriptSize = 10000

// opReturn is OP_RETURN: a script that starts with it fails when run.
const opReturn = 0x6a

// Outpoint names an output: its transaction's id, in internal byte order
// (as hashed, not as displayed), and its index.
type Outpoint struct {
	TxID chainhash.Hash
	Vout uint32
}

// Compare orders outpoints as Core's coins database holds them: by txid
// in internal byte order, then by vout.
func (o Outpoint) Compare(p Outpoint) int {
	if c := bytes.Compare(o.TxID[:], p.TxID[:]); c != 0 {
		return c
	}
	return cmp.Compare(o.Vout, p.Vout)
}

// String is "txid:vout", the txid as displayed.
func (o Outpoint) String() string { return fmt.Sprintf("%s:%d", o.TxID, o.Vout) }

// Coin is one output of the UTXO set.
type Coin struct {
	Outpoint
	// Height is the height of the block that created the output; Coinbase
	// says whether a coinbase did.
	Height   uint32
	Coinbase bool
	// Value in satoshis and the locking script.
	Value  uint64
	Script []byte
}

// Equal reports whether c and o are the same coin: outpoint, height,
// coinbase flag, value and script.
func (c Coin) Equal(o Coin) bool {
	return c.Outpoint == o.Outpoint && c.Height == o.Height && c.Coinbase == o.Coinbase &&
		c.Value == o.Value && bytes.Equal(c.Script, o.Script)
}

// Unspendable reports whether an output with this script can never be
// spent: it starts with OP_RETURN or is longer than MaxScriptSize (Core's
// CScript::IsUnspendable).
func Unspendable(script []byte) bool {
	return (len(script) > 0 && script[0] == opReturn) || len(script) > MaxScriptSize
}

// InSet reports whether Core's UTXO set holds the coin: it is spendable and
// not an output of the genesis block (the block at height 0).
func (c *Coin) InSet() bool {
	return c.Height > 0 && !Unspendable(c.Script)
}

// AppendTxOutSer appends Core's TxOutSer serialization of the coin.
func (c *Coin) AppendTxOutSer(dst []byte) []byte {
	dst = append(dst, c.TxID[:]...)
	dst = binary.LittleEndian.AppendUint32(dst, c.Vout)
	code := c.Height << 1
	if c.Coinbase {
		code |= 1
	}
	dst = binary.LittleEndian.AppendUint32(dst, code)
	dst = binary.LittleEndian.AppendUint64(dst, c.Value)
	dst = chain.AppendCompactSize(dst, uint64(len(c.Script)))
	return append(dst, c.Script...)
}
