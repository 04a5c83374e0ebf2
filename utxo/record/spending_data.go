package record

import (
	"encoding/binary"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/utxostore/utxostore/utxo/model"
)

// SpendingDataSize is the size of the spending data appended to a spent
// UTXO entry: the spending transaction's id and its input index.
const SpendingDataSize = 36

// frozenSpendingData is the alert system's freeze marker: 36 bytes of 0xFF.
var frozenSpendingData = model.SpendingData{
	TxID: chainhash.Hash{
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	},
	Vin: 0xffffffff,
}

// isFrozenMarker reports whether s is the 36 × 0xFF pattern that marks a
// frozen output rather than a real spender.
func isFrozenMarker(s model.SpendingData) bool { return s == frozenSpendingData }

// appendSpendingData appends s's 36-byte encoding to dst: TxID ‖
// little-endian Vin.
func appendSpendingData(dst []byte, s model.SpendingData) []byte {
	dst = append(dst, s.TxID[:]...)
	return binary.LittleEndian.AppendUint32(dst, s.Vin)
}

// DecodeSpendingData parses exactly 36 bytes. The frozen marker decodes
// like any other value; check isFrozenMarker.
func DecodeSpendingData(b []byte) (model.SpendingData, error) {
	if len(b) != SpendingDataSize {
		return model.SpendingData{}, malformed("spending data is %d bytes, want %d", len(b), SpendingDataSize)
	}
	var s model.SpendingData
	copy(s.TxID[:], b[:32])
	s.Vin = binary.LittleEndian.Uint32(b[32:])
	return s, nil
}
