package record

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// LockRecordIndex is the record index reserved for a multi-record
// transaction's creation lock. No child record can reach it: that would
// need 2^32 × batch-size outputs.
//
// The index is the one Teranode's lock record pattern documents
// (https://bsv-blockchain.github.io/teranode/topics/features/utxo_lock_records);
// the reference at commit fb3d000, the version this store is compared
// with, has no lock record.
const LockRecordIndex = uint32(0xFFFFFFFF)

// Key is the 32-byte key under which an engine stores a record. Txids are
// already uniformly distributed, so the master key is the txid itself; child
// and lock keys are hashed so they are uniform too (engines shard and bucket
// on the key's leading bytes).
type Key [32]byte

// MasterKey is the key of a transaction's master record (index 0): the txid.
func MasterKey(txid chainhash.Hash) Key { return Key(txid) }

// ChildKey is SHA-256(txid ‖ LE uint32 index): the key of child record index.
// Use RecordKey when index may be 0.
func ChildKey(txid chainhash.Hash, index uint32) Key {
	var src [chainhash.HashSize + 4]byte
	copy(src[:], txid[:])
	binary.LittleEndian.PutUint32(src[chainhash.HashSize:], index)
	return Key(sha256.Sum256(src[:]))
}

// RecordKey is the key of record index of txid: the master key for 0, the
// child key otherwise.
func RecordKey(txid chainhash.Hash, index uint32) Key {
	if index == 0 {
		return MasterKey(txid)
	}
	return ChildKey(txid, index)
}

// LockKey is the key of txid's creation lock record.
func LockKey(txid chainhash.Hash) Key { return ChildKey(txid, LockRecordIndex) }

// KeyForOutput is the key of the record holding output vout of txid when
// records hold batchSize outputs each (<= 0 means DefaultUtxoBatchSize).
func KeyForOutput(txid chainhash.Hash, vout uint32, batchSize int) Key {
	index, _ := Locate(vout, batchSize)
	return RecordKey(txid, index)
}
