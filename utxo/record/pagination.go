package record

import "time"

// DefaultUtxoBatchSize is how many outputs one record holds by default
// (utxo_store_batch_size). Smaller batches mean more records per large
// transaction; larger batches risk an engine's value-size limit.
const DefaultUtxoBatchSize = 20000

// normalizeBatchSize maps a non-positive batch size to the default so every
// function here agrees on what "unset" means.
func normalizeBatchSize(batchSize int) int {
	if batchSize <= 0 {
		return DefaultUtxoBatchSize
	}
	return batchSize
}

// NumRecords is how many records (master + children) a transaction with
// outputs outputs occupies. A transaction always has its master record, so
// 0 outputs still needs 1.
func NumRecords(outputs, batchSize int) int {
	batchSize = normalizeBatchSize(batchSize)
	if outputs <= 0 {
		return 1
	}
	return (outputs + batchSize - 1) / batchSize
}

// Locate returns the record index holding output vout and the output's
// offset inside that record's utxos array.
func Locate(vout uint32, batchSize int) (index, offset uint32) {
	b := uint64(normalizeBatchSize(batchSize))
	return uint32(uint64(vout) / b), uint32(uint64(vout) % b)
}

// RecordIndex is the index of the record holding output vout.
func RecordIndex(vout uint32, batchSize int) uint32 {
	index, _ := Locate(vout, batchSize)
	return index
}

// Offset is the position of output vout inside its record's utxos array.
func Offset(vout uint32, batchSize int) uint32 {
	_, offset := Locate(vout, batchSize)
	return offset
}

// The lock record's time to live: min(LockRecordBaseTTL +
// LockRecordPerRecordTTL × records, LockRecordMaxTTL), as Teranode's lock
// record pattern sets it
// (https://bsv-blockchain.github.io/teranode/topics/features/utxo_lock_records).
const (
	LockRecordBaseTTL      = 30 * time.Second
	LockRecordPerRecordTTL = 2 * time.Second
	LockRecordMaxTTL       = 300 * time.Second
)

// LockTTL is how long a creation lock for a transaction of records records
// lives: long enough to write them all, short enough that a crashed writer
// does not block the transaction for long. min(30 s + 2 s × records, 300 s).
func LockTTL(records int) time.Duration {
	if records < 0 {
		records = 0
	}
	if records >= int((LockRecordMaxTTL-LockRecordBaseTTL)/LockRecordPerRecordTTL) {
		return LockRecordMaxTTL
	}
	return LockRecordBaseTTL + time.Duration(records)*LockRecordPerRecordTTL
}
