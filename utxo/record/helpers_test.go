package record

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/utxo/model"
)

// h returns a deterministic hash derived from a label, for readable tests.
func h(label string) chainhash.Hash { return chainhash.Hash(sha256.Sum256([]byte(label))) }

// hn returns a deterministic hash derived from a label and a number.
func hn(label string, n int) chainhash.Hash {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(n))
	return chainhash.Hash(sha256.Sum256(append([]byte(label), b[:]...)))
}

// sd returns spending data for input vin of the tx named label.
func sd(label string, vin uint32) model.SpendingData {
	return model.SpendingData{TxID: h(label), Vin: vin}
}

// utxoHashes returns n per-output hashes of tx; outputs listed in skip are nil.
func utxoHashes(tx string, n int, skip ...int) []*chainhash.Hash {
	out := make([]*chainhash.Hash, n)
	for i := range out {
		v := hn(tx+"/out", i)
		out[i] = &v
	}
	for _, s := range skip {
		out[s] = nil
	}
	return out
}

// richRecord is a master record with every field set, for codec tests.
func richRecord() *Record {
	r := &Record{
		TxID:                h("rich"),
		Utxos:               []Entry{NewUnspentEntry(hn("u", 0)), nil, NewSpentEntry(hn("u", 2), sd("spender", 7)), NewFrozenEntry(hn("u", 3)), NewUnspentEntry(hn("u", 4))},
		UtxoSpendableIn:     map[uint32]uint32{4: 1234, 0: 99},
		RecordUtxos:         4,
		SpentUtxos:          1,
		TotalUtxos:          5,
		Frozen:              true,
		Locked:              true,
		Creating:            true,
		Conflicting:         true,
		ConflictingChildren: []chainhash.Hash{h("c1"), h("c2")},
		DeletedChildren:     []chainhash.Hash{h("d1")},
		UnminedSince:        0,
		CreatedAt:           1_700_000_000_123,
		PreserveUntil:       500,
		DeleteAtHeight:      0,
		SpendingHeight:      200,
		BlockIDs:            []uint32{7, 9},
		BlockHeights:        []uint32{100, 101},
		SubtreeIdxs:         []int{0, -1},
		Reassignments:       []Reassignment{{Offset: 4, UtxoHash: hn("old", 4), NewUtxoHash: hn("u", 4), BlockHeight: 234}},
		Tx:                  []byte{1, 0, 0, 0, 0xde, 0xad},
		Version:             2,
		LockTime:            0xfffffffe,
		Fee:                 1 << 40,
		SizeInBytes:         250,
		TxInpoints:          model.NewTxInpoints([]model.Outpoint{{TxID: h("p1"), Vout: 0}, {TxID: h("p2"), Vout: 3}, {TxID: h("p1"), Vout: 2}}),
		IsCoinbase:          true,
	}
	return r
}

func mustDecode(t testing.TB, b []byte) *Record {
	t.Helper()
	r, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return r
}

// assertSameBytes fails when two records do not encode identically.
func assertSameBytes(t testing.TB, want, got *Record) {
	t.Helper()
	if !bytes.Equal(want.Encode(), got.Encode()) {
		t.Fatalf("records differ:\nwant %+v\ngot  %+v", want, got)
	}
}

// reassignmentDelay is the store's default wait of a reassigned output
// (utxo.ReassignmentDelay), which the store passes to Reassign.
const reassignmentDelay = 1000
