package coinstats

import (
	"crypto/sha256"
	"fmt"
	"hash"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// Walk computes every statistic of a whole set from its coins in outpoint
// order (Outpoint.Compare), as Core's gettxoutsetinfo walks its coins
// database: Stats, and hash_serialized_3 (Serialized). The zero value is
// ready to use.
type Walk struct {
	stats      Stats
	serialized Serialized
}

// Serialized computes hash_serialized_3 of a set from its coins in
// outpoint order: the double SHA-256 of the coins' serializations in that
// order. It is the part of a Walk for a caller that has the set's Stats
// from elsewhere. The zero value is ready to use.
type Serialized struct {
	h        hash.Hash
	started  bool
	previous Outpoint
	buf      []byte
}

// OrderError is Walk.Add's error for a coin that does not follow the one
// before it in outpoint order.
type OrderError struct {
	Previous, Coin Outpoint
}

func (e *OrderError) Error() string {
	return fmt.Sprintf("coin %s does not follow %s in outpoint order (txid in internal byte order, then vout)", e.Coin, e.Previous)
}

// Add counts c, which must follow the coin added before it in outpoint
// order; a coin the set does not hold (Coin.InSet) is left out, but its
// order is checked too.
func (w *Walk) Add(c *Coin) error {
	if err := w.serialized.Add(c); err != nil {
		return err
	}
	w.stats.Add(c)
	return nil
}

// Finalize returns the statistics of the coins added.
func (w *Walk) Finalize() Summary {
	sum := w.stats.Finalize()
	sum.HashSerialized3 = w.serialized.Sum()
	return sum
}

// Add hashes c, which must follow the coin added before it in outpoint
// order; a coin the set does not hold (Coin.InSet) is left out, but its
// order is checked too.
func (s *Serialized) Add(c *Coin) error {
	if s.started && s.previous.Compare(c.Outpoint) >= 0 {
		return &OrderError{Previous: s.previous, Coin: c.Outpoint}
	}
	s.started, s.previous = true, c.Outpoint
	if !c.InSet() {
		return nil
	}
	if s.h == nil {
		s.h = sha256.New()
	}
	s.buf = c.AppendTxOutSer(s.buf[:0])
	s.h.Write(s.buf)
	return nil
}

// Sum is hash_serialized_3 of the coins added, as Core prints it.
func (s *Serialized) Sum() string {
	if s.h == nil {
		s.h = sha256.New()
	}
	return chainhash.Hash(sha256.Sum256(s.h.Sum(nil))).String()
}
