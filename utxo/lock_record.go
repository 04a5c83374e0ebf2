package utxo

import (
	"encoding/json"
	"os"
	"time"
)

// lockRecord is the value of a transaction's lock record (index
// 0xFFFFFFFF), taken create-only with a time to live while its records are
// written. Its bins say who holds it, for an operator looking at a stuck
// create.
type lockRecord struct {
	CreatedAt    int64  `json:"created_at"`
	LockType     string `json:"lock_type"`
	ProcessID    int    `json:"process_id"`
	Hostname     string `json:"hostname"`
	ExpectedRecs int    `json:"expected_recs"`
}

func newLockRecord(now time.Time, records int) lockRecord {
	host, _ := os.Hostname()
	return lockRecord{
		CreatedAt:    now.Unix(),
		LockType:     "tx_creation",
		ProcessID:    os.Getpid(),
		Hostname:     host,
		ExpectedRecs: records,
	}
}

func (l lockRecord) encode() []byte {
	b, _ := json.Marshal(l) // a struct of plain fields always marshals
	return b
}

// decodeLockRecord parses a lock record's value.
func decodeLockRecord(b []byte) (lockRecord, error) {
	var l lockRecord
	err := json.Unmarshal(b, &l)
	return l, err
}

// isLockRecord tells a lock record (JSON) from a transaction record, whose
// first byte is its format version, when walking every key.
func isLockRecord(v []byte) bool { return len(v) > 0 && v[0] == '{' }

// faults are hooks that tests use to fail a multi-record create between its
// steps; nil in normal operation.
type faults struct {
	afterLock           func() error
	afterBlob           func() error
	afterRecords        func(written int) error
	beforeMasterCleared func() error
}
