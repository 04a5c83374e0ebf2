package index

import "github.com/btcsuite/btcd/chaincfg/chainhash"

// Block is the chain-agnostic block the index consumes. Callers with btcd
// blocks use FromWireBlock; other chains fill it directly.
type Block struct {
	Height uint32
	Hash   chainhash.Hash // btcd internal byte order
	Time   uint32         // block header time, Unix seconds
	Size   uint32         // serialized size in bytes
	Txs    []Tx
}

// Tx is one transaction of a Block.
type Tx struct {
	ID      chainhash.Hash // btcd internal byte order
	Inputs  []Outpoint
	Outputs []Output
}

// Outpoint is the previous output an input spends. Coinbase marks the
// input of a coinbase transaction, which spends nothing; TxID and Vout are
// then ignored.
type Outpoint struct {
	TxID     chainhash.Hash
	Vout     uint32
	Coinbase bool
}

// Output is one transaction output: its locking script, which is also its
// address descriptor, and its value in satoshis.
type Output struct {
	Script []byte
	Value  uint64
}
