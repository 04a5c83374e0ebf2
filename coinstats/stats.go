package coinstats

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Stats is the order-free part of a UTXO set's statistics: its coin count,
// its value and its MuHash. A store can keep one per block: add each coin a
// block creates, remove each it spends (or gather a block's changes in a
// Stats of their own and Combine it), and save the result with
// MarshalBinary. The zero value is the empty set. A Stats is not safe
// for concurrent use.
type Stats struct {
	// TxOuts counts the coins in the set.
	TxOuts uint64
	// TotalAmount is their value in satoshis.
	TotalAmount uint64
	muhash      MuHash
}

// Summary is what Stats and Walk report, under the names of Core's RPC
// results (gettxoutsetinfo); TotalAmount is in satoshis.
type Summary struct {
	TxOuts      uint64 `json:"txouts"`
	TotalAmount uint64 `json:"total_amount"`
	// HashSerialized3 is set by Walk (or from Serialized) only: it depends
	// on the order.
	HashSerialized3 string `json:"hash_serialized_3,omitempty"`
	MuHash          string `json:"muhash"`
}

// serializationSize is room for a usual coin's serialization: outpoint,
// height code, value, and a script up to 50 bytes with its length.
const serializationSize = 32 + 4 + 4 + 8 + 1 + 50

// Add counts c into the set, if the set holds it (Coin.InSet); it reports
// whether it did.
func (s *Stats) Add(c *Coin) bool {
	if !c.InSet() {
		return false
	}
	var buf [serializationSize]byte
	s.muhash.Insert(c.AppendTxOutSer(buf[:0]))
	s.TxOuts++
	s.TotalAmount += c.Value
	return true
}

// Remove takes c out of the set, if the set holds it (Coin.InSet); it
// reports whether it did. c must be the coin as it was added.
func (s *Stats) Remove(c *Coin) bool {
	if !c.InSet() {
		return false
	}
	var buf [serializationSize]byte
	s.muhash.Remove(c.AppendTxOutSer(buf[:0]))
	s.TxOuts--
	s.TotalAmount -= c.Value
	return true
}

// Combine adds o's changes to s: o may hold the coins one block added and
// removed, gathered apart.
func (s *Stats) Combine(o *Stats) {
	s.muhash.Combine(&o.muhash)
	s.TxOuts += o.TxOuts
	s.TotalAmount += o.TotalAmount
}

// Subtract takes o's changes back out of s, the inverse of Combine.
func (s *Stats) Subtract(o *Stats) {
	s.muhash.Subtract(&o.muhash)
	s.TxOuts -= o.TxOuts
	s.TotalAmount -= o.TotalAmount
}

// Finalize returns the set's statistics (without hash_serialized_3).
func (s *Stats) Finalize() Summary {
	return Summary{TxOuts: s.TxOuts, TotalAmount: s.TotalAmount, MuHash: s.muhash.Finalize().String()}
}

// statsVersion is the first byte of Stats' binary form.
const statsVersion = 1

// StatsSize is the length of Stats' binary form: a version byte, TxOuts
// and TotalAmount as 64-bit little-endian, and the MuHash state.
const StatsSize = 1 + 8 + 8 + MuHashSize

// MarshalBinary returns s in StatsSize bytes.
func (s *Stats) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, StatsSize)
	b = append(b, statsVersion)
	b = binary.LittleEndian.AppendUint64(b, s.TxOuts)
	b = binary.LittleEndian.AppendUint64(b, s.TotalAmount)
	return s.muhash.AppendBinary(b)
}

// ErrStatsState is the error of UnmarshalBinary for bytes that are no
// Stats.
var ErrStatsState = errors.New("coinstats: not a Stats state")

// UnmarshalBinary sets s to what MarshalBinary wrote.
func (s *Stats) UnmarshalBinary(b []byte) error {
	if len(b) != StatsSize {
		return fmt.Errorf("%w: %d bytes, want %d", ErrStatsState, len(b), StatsSize)
	}
	if b[0] != statsVersion {
		return fmt.Errorf("%w: version %d, want %d", ErrStatsState, b[0], statsVersion)
	}
	var m MuHash
	if err := m.UnmarshalBinary(b[17:]); err != nil {
		return fmt.Errorf("%w: %w", ErrStatsState, err)
	}
	s.TxOuts = binary.LittleEndian.Uint64(b[1:])
	s.TotalAmount = binary.LittleEndian.Uint64(b[9:])
	s.muhash = m
	return nil
}
