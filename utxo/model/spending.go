package model

import "github.com/btcsuite/btcd/chaincfg/chainhash"

// SpendingData names the input that spent an output: transaction TxID
// (internal byte order), input Vin.
type SpendingData struct {
	TxID chainhash.Hash
	Vin  uint32
}
