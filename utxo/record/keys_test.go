package record

import (
	"crypto/sha256"
	"testing"
	"time"
)

func TestKeys(t *testing.T) {
	txid := h("tx")
	if MasterKey(txid) != Key(txid) {
		t.Fatal("master key is not the txid")
	}
	src := append(append([]byte{}, txid[:]...), 2, 0, 0, 0)
	if ChildKey(txid, 2) != Key(sha256.Sum256(src)) {
		t.Fatal("child key is not SHA-256(txid || LE index)")
	}
	lockSrc := append(append([]byte{}, txid[:]...), 0xff, 0xff, 0xff, 0xff)
	if LockKey(txid) != Key(sha256.Sum256(lockSrc)) {
		t.Fatal("lock key")
	}
	if RecordKey(txid, 0) != MasterKey(txid) || RecordKey(txid, 3) != ChildKey(txid, 3) {
		t.Fatal("record key")
	}
	for _, c := range []struct {
		vout  uint32
		batch int
		index uint32
	}{{0, 0, 0}, {19999, 0, 0}, {20000, 0, 1}, {45000, 0, 2}, {5, 2, 2}, {0xffffffff, 1, 0xffffffff}} {
		if got := KeyForOutput(txid, c.vout, c.batch); got != RecordKey(txid, c.index) {
			t.Errorf("KeyForOutput(%d, %d) is not record %d", c.vout, c.batch, c.index)
		}
	}
	if ChildKey(txid, 1) == ChildKey(h("other"), 1) || ChildKey(txid, 1) == ChildKey(txid, 2) {
		t.Fatal("child keys collide")
	}
}

func TestPagination(t *testing.T) {
	for _, c := range []struct{ outputs, batch, records int }{
		{0, 0, 1}, {1, 0, 1}, {20000, 0, 1}, {20001, 0, 2}, {45000, 0, 3}, {100001, 0, 6},
		{100000, 0, 5}, {10, 3, 4}, {9, 3, 3}, {1, 1, 1}, {7, -5, 1},
	} {
		if got := NumRecords(c.outputs, c.batch); got != c.records {
			t.Errorf("NumRecords(%d, %d) = %d, want %d", c.outputs, c.batch, got, c.records)
		}
	}
	for _, c := range []struct {
		vout          uint32
		batch         int
		index, offset uint32
	}{
		{0, 0, 0, 0}, {19999, 0, 0, 19999}, {20000, 0, 1, 0}, {20001, 0, 1, 1}, {100000, 0, 5, 0},
		{44999, 0, 2, 4999}, {7, 3, 2, 1}, {0xffffffff, 0, 214748, 7295},
	} {
		i, o := Locate(c.vout, c.batch)
		if i != c.index || o != c.offset || RecordIndex(c.vout, c.batch) != i || Offset(c.vout, c.batch) != o {
			t.Errorf("Locate(%d, %d) = %d,%d want %d,%d", c.vout, c.batch, i, o, c.index, c.offset)
		}
	}
}

func TestLockTTL(t *testing.T) {
	for _, c := range []struct {
		records int
		ttl     time.Duration
	}{{0, 30 * time.Second}, {1, 32 * time.Second}, {10, 50 * time.Second}, {100, 230 * time.Second},
		{134, 298 * time.Second}, {135, 300 * time.Second}, {200, 300 * time.Second}, {1 << 40, 300 * time.Second}, {-1, 30 * time.Second}} {
		if got := LockTTL(c.records); got != c.ttl {
			t.Errorf("LockTTL(%d) = %v, want %v", c.records, got, c.ttl)
		}
	}
}
