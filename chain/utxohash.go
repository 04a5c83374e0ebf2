package chain

import (
	"crypto/sha256"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// UTXOHash identifies one output by its content, so that a spend can prove
// it refers to the exact output stored (the UTXO_HASH_MISMATCH check):
//
//	SHA256( txid[32, internal byte order] ‖ CompactSize(vout) ‖ lockingScript ‖ CompactSize(satoshis) )
//
// It is a single SHA-256, and the script carries no length prefix, as in
// the reference implementation.
func UTXOHash(txid chainhash.Hash, vout uint32, lockingScript []byte, satoshis uint64) [32]byte {
	var varint [9]byte
	h := sha256.New()
	h.Write(txid[:])
	h.Write(AppendCompactSize(varint[:0], uint64(vout)))
	h.Write(lockingScript)
	h.Write(AppendCompactSize(varint[:0], satoshis))
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}
