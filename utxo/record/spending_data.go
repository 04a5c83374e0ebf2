package record

import (
	"encoding/binary"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// SpendingDataSize is the size of the spending data appended to a spent
// UTXO entry: the spending transaction's id and its input index.
const SpendingDataSize = 36

// SpendingData names the input that spent an output: transaction TxID
// (internal byte order), input Vin.
type SpendingData struct {
	TxID chainhash.Hash
	Vin  uint32
}

// frozenSpendingData is the alert system's freeze marker: 36 bytes of 0xFF.
var frozenSpendingData = SpendingData{
	TxID: chainhash.Hash{
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	},
	Vin: 0xffffffff,
}

// IsFrozenMarker reports whether s is the 36 × 0xFF pattern that marks a
// frozen output rather than a real spender.
func (s SpendingData) IsFrozenMarker() bool { return s == frozenSpendingData }

// Bytes returns the 36-byte encoding: TxID ‖ little-endian Vin.
func (s SpendingData) Bytes() [SpendingDataSize]byte {
	var b [SpendingDataSize]byte
	copy(b[:32], s.TxID[:])
	binary.LittleEndian.PutUint32(b[32:], s.Vin)
	return b
}

// AppendTo appends the 36-byte encoding to dst.
func (s SpendingData) AppendTo(dst []byte) []byte {
	dst = append(dst, s.TxID[:]...)
	return binary.LittleEndian.AppendUint32(dst, s.Vin)
}

// DecodeSpendingData parses exactly 36 bytes. The frozen marker decodes
// like any other value; check IsFrozenMarker.
func DecodeSpendingData(b []byte) (SpendingData, error) {
	if len(b) != SpendingDataSize {
		return SpendingData{}, malformed("spending data is %d bytes, want %d", len(b), SpendingDataSize)
	}
	var s SpendingData
	copy(s.TxID[:], b[:32])
	s.Vin = binary.LittleEndian.Uint32(b[32:])
	return s, nil
}
