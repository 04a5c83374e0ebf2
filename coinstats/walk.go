package coinstats

import (
	"crypto/sha256"
	"fmt"
	"hash"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

// Walk computes every statistic of a whole set from its coins in outpoint
// order (Outpoint.Compare), as Core's gettxoutsetinfo walks its coins
// database: Stats, and hash_serialized_3, the double SHA-256 of the coins'
// serializations in that order. The zero value is ready to use.
type Walk struct {
	stats      Stats
	serialized hash.Hash
	started    bool
	previous   Outpoint
	buf        []byte
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
	if w.started && w.previous.Compare(c.Outpoint) >= 0 {
		return &OrderError{Previous: w.previous, Coin: c.Outpoint}
	}
	w.started, w.previous = true, c.Outpoint
	if !w.stats.Add(c) {
		return nil
	}
	if w.serialized == nil {
		w.serialized = sha256.New()
	}
	w.buf = c.AppendTxOutSer(w.buf[:0])
	w.serialized.Write(w.buf)
	return nil
}

// Finalize returns the statistics of the coins added.
func (w *Walk) Finalize() Summary {
	sum := w.stats.Finalize()
	if w.serialized == nil {
		w.serialized = sha256.New()
	}
	sum.HashSerialized3 = chainhash.Hash(sha256.Sum256(w.serialized.Sum(nil))).String()
	return sum
}
