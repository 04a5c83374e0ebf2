// Package benchmetric is the benchmarks' vocabulary, defined once: what
// `utxostore bench` (bench/report, bench/driver, bench/mapref) and the
// engines' BenchCreateSpendMix (engine/enginetest) call logical bytes,
// write-amp and disk/minimal, and how each is computed.
//
// Logical bytes are what a workload asks a store to record, counted by
// what the operations mean, not by how any store encodes them. A create
// counts the bytes it creates; a spend counts the bytes that say what was
// spent; operations that change only state the store already holds
// (set-mined, connect, disconnect) and reads count nothing. Whatever else
// a store writes (framing, indexes, its log, compaction) is amplification.
//   - Through the store (`utxostore bench`): a created transaction's
//     serialised bytes, and OutpointBytes per input spent.
//   - At the engine (BenchCreateSpendMix): a created record's key and
//     value, and a spent record's key and the SpendDataBytes it appends.
//
// Write-amp is the bytes the storage device wrote over the logical bytes
// (WriteAmp).
//
// Disk/minimal is the bytes the store takes on disk over the minimal size
// of what it holds live (DiskPerMinimal): through the store the live
// UTXOs' MinimalUTXOBytes, at the engine the live records' keys and
// values. Its floor is 1.
package benchmetric

// The metrics' names, as the reports print them.
const (
	WriteAmpName       = "write-amp"
	DiskPerMinimalName = "disk/minimal"
)

// OutpointBytes is a spend's logical bytes through the store: the outpoint
// it spends (32-byte txid, 4-byte output index).
const OutpointBytes = 36

// SpendDataBytes is what a spend appends to a UTXO record: the spending
// transaction's 32-byte txid and 4-byte input index.
const SpendDataBytes = 36

// MinimalUTXOBytes is the minimal serialised size of one unspent output:
// its outpoint, its 8-byte value and its locking script.
func MinimalUTXOBytes(scriptLen int) uint64 { return OutpointBytes + 8 + uint64(scriptLen) }

// WriteAmp is the device bytes written over the logical bytes; 0 when no
// logical bytes were asked for.
func WriteAmp(deviceBytes, logicalBytes int64) float64 {
	if logicalBytes <= 0 {
		return 0
	}
	return float64(deviceBytes) / float64(logicalBytes)
}

// DiskPerMinimal is the bytes on disk over the minimal bytes of the live
// data; 0 when either is unknown (no local files, or nothing live).
func DiskPerMinimal(diskBytes, minimalBytes int64) float64 {
	if diskBytes <= 0 || minimalBytes <= 0 {
		return 0
	}
	return float64(diskBytes) / float64(minimalBytes)
}
